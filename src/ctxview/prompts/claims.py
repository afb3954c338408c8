"""What the model is told, claim by claim, for what is really active where it is told.

Each claim is one paragraph of the block: a `key` (tests/test_prompts.py and the agent tests
drive each key's behaviour and fail on a claim without a check), its text, and the `examples`
of the text the model will really get that the paragraph quotes. The hosts:

- `ENGINE`: a harness that runs or inserts results through `Session` itself (README "For harness
  authors"); `dedupe.by_result` names its searches, `elide.enabled` adds the elision claim.
- `MCP`: `ctxview mcp --tools all` (Codex, any MCP host): the engine's tools as the server's
  tools. The host compacts on its own, unseen, so no files-read table is promised.
- `CLAUDE`: Claude Code with ctxview's hooks (the MCP server adds `recall`): what each hook that
  is on does to Claude Code's own tools (`src/ctxview/agents/claude_code/hooks.py`).
- `RECALL`: `recall` alone, in a host whose results ctxview did not shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ctxview.rules.config import Config

ENGINE, MCP, CLAUDE, RECALL = "engine", "mcp", "claude-code", "recall"
GEMINI = "gemini"  # Gemini CLI's hooks: its own tools shaped, recall as ctxview's MCP tool


@dataclass(frozen=True)
class Active:
    """What is active where the block is shown. `tools`: the tools served (MCP); `hooks`: the
    Claude Code events ctxview's hooks are on for (CLAUDE); `shows_at_most`: per Claude Code tool,
    the characters it sends whole (the cap is fitted under it); `saved_past`: per Claude Code
    tool, the characters past which it saves the output to a file and sends a note with a
    preview instead, before any hook sees the output."""

    host: str = ENGINE
    tools: tuple[str, ...] = ()
    hooks: frozenset[str] = frozenset()
    shows_at_most: Mapping[str, int] = field(default_factory=dict)
    saved_past: Mapping[str, int] = field(default_factory=dict)  # the host's own file, then


@dataclass(frozen=True)
class Claim:
    key: str
    text: str
    examples: tuple[str, ...] = ()
    section: str = "results"  # "results" (the bullets) or "recall"


def claims(config: Config | None = None, active: Active | None = None) -> list[Claim]:
    """The claims for `active` (default: the engine used directly), in the block's order."""
    config = config or Config()
    active = active or Active()
    if active.host == CLAUDE:
        if "PostToolUse" not in active.hooks:  # Claude Code's tools are not shaped: recall only
            return _recall_only(config, "mcp__ctxview__recall")
        return _claude(config, active)
    if active.host == RECALL:
        return _recall_only(config, "recall")
    if active.host == GEMINI:
        return _recall_only(config, "mcp_ctxview_recall")
    return _engine(config, active)


# The examples, built with the config's own sentences so they are the engine's.


def _ex(config: Config) -> dict[str, str]:
    w = config["window.lines"]
    return {
        "bracket": "[#a3f2 src/app.ts lines 1-200 of 340 sha 1c9e04ab]",
        "empty": "[#a3f2 notes.txt empty sha e3b0c442]",
        "stub": "[#b710 src/app.ts lines 50-80 of 340 sha 1c9e04ab] "
        + config.text("text.unchanged", ref="#a3f2", lines="1-200"),
        "same": "[#f002] " + config.text("text.same_result", ref="#f001"),
        "elided": config.text("text.elided", n=1234, ref="#c9d0"),
        "cut": config.text("text.cut"),
        "diff": "[#e201 src/app.ts sha 7d0a91c3]",
        "created": "[#e202 docs/new.md sha 52b6e3a0] " + config.text("text.created", n=14),
        "deleted": "[#e203 old.md deleted]",
        "recall": f"[#d004 recall #c9d0 lines {w + 1}-3400 of 3400]",
        "none": config.text("text.no_result", ref="#ffff"),
        "table": config.text("text.files_read_heading"),
    }


def _ids(where: str) -> Claim:
    return Claim("ids", f"Every tool result has an id in brackets, such as `[#a3f2]`, {where}. "
                 "Ids are unique in this session and never reused.")  # fmt: skip


def _unchanged(ex: dict[str, str]) -> Claim:
    return Claim("unchanged", "**Unchanged re-reads.** Lines you already have, of a file that has "
                 f"not changed, come as one line: `{ex['stub']}` (the lines are in #a3f2, earlier "
                 "in this conversation). A file that changed, by your edit or anyone else's, is "
                 "shown in full.", (ex["stub"],))  # fmt: skip


def _cap(config: Config, ex: dict[str, str], which: str, aside: str, more: str = "",
         also: tuple[str, ...] = ()) -> Claim:  # fmt: skip
    return Claim("cap", f"**Long output.** {which} over {config['cap.max_lines']} lines or "
                 f"{config['cap.max_chars']:,} characters ({aside}) keeps its start and end with "
                 f"one line between: `{ex['elided']}`; a very long first line ends "
                 f"`{ex['cut']}`. The whole output is stored.{more}",
                 (ex["elided"], *also))  # fmt: skip


def _recall(config: Config, ex: dict[str, str], name: str, lead: str) -> Claim:
    w = config["window.lines"]
    return Claim("recall", f"`{name}(id, offset?, limit?)` {lead} (elided output, the lines a "
                 "stub stands for, a diff, results from before a summary): `id` with or without "
                 "`#`, `offset` the first line (from 1, default 1), `limit` the number of lines "
                 f"(default and most {w}):\n\n"
                 f'    {name}("#c9d0", offset={w + 1})\n    {ex["recall"]}\n\n'
                 "Use it instead of re-running a command to see elided output. An id this "
                 f"session never gave answers `{ex['none']}`",
                 (ex["recall"], ex["none"]), section="recall")  # fmt: skip


def _engine(config: Config, active: Active) -> list[Claim]:
    ex = _ex(config)
    w = config["window.lines"]
    searches = list(config["dedupe.by_result"])
    if active.host == MCP:
        searches = [t for t in searches if t in active.tools]
    out = [
        _ids("first in this server's answer" if active.host == MCP else "first in the result"),
        Claim("reads", f"**Reads.** A read shows at most {w} lines from its offset, numbered "
              "`1: …`, under a bracket that gives the path, the lines shown, the file's length "
              "in lines and the first digits of the SHA-256 of its content: "
              f"`{ex['bracket']}`. The rest of a longer file is a read away: `offset` the line "
              f"after the last one shown. An empty file is `{ex['empty']}`.",
              (ex["bracket"], ex["empty"])),
        _unchanged(ex),
    ]  # fmt: skip
    if searches:
        names = _names(searches)
        out.append(Claim("same-search", f"**Same search twice.** Running {names} again with the "
                         "same arguments and getting the same output gives "
                         f"`{ex['same']}` Output that changed is shown in full. Other tools, "
                         "commands too, are never shortened this way: the same output twice is "
                         "two results.", (ex["same"],)))  # fmt: skip
    out += [
        _cap(config, ex, "Output", "any result but a read's or a recall's, which have their "
             "window"),
        Claim("edits", "**Edits.** `edit`, `multiedit`, `write` and `apply_patch` answer with a "
              "unified diff (three lines of context) under a bracket with the path and the new "
              f"content's hash: `{ex['diff']}`. A new file answers `{ex['created']}`, a deleted "
              f"one `{ex['deleted']}`. A patch over several files gives each file its own "
              "bracket, in the patch's order. A note after the diff (for example that the file "
              "changed outside this session) is worth reading.",
              (ex["diff"], ex["created"], ex["deleted"])),
    ]  # fmt: skip
    if active.host == MCP:
        out.append(_unseen_compaction())
    else:
        out.append(_table(ex, "the summary is followed by a table"))
    if active.host == ENGINE and config["elide.enabled"]:
        sample = config.text("text.elided_result", ref="#c9d0", chars="12,345", what="bash")
        out.append(Claim("elide", "**Older results.** Once the conversation is longer than "
                         f"{config['elide.threshold_chars']:,} characters, a result older than "
                         f"the last {config['elide.keep']} messages and longer than "
                         f"{config['elide.min_chars']:,} characters is sent as one line: "
                         f"`{sample}`.", (sample,)))  # fmt: skip
    if active.host == MCP:
        # First: Codex names a deferred tool namespace by its instructions' first line.
        out.insert(0, Claim("lead", "ctxview's tools (" + ", ".join(active.tools) + "): every "
                            "result has an id, an unchanged re-read or a repeated search is one "
                            "line, long output is capped, and recall brings any result back.",
                            section="lead"))  # fmt: skip
        out.append(Claim("prefer", "Use this server's tools (" + ", ".join(active.tools) + ") "
                         "rather than the host's own tools for the same jobs (its shell, its "
                         "own `apply_patch`): their results follow the rules above, are kept, "
                         "and recall finds them; the host's own answer has no id.",
                         section="tools"))  # fmt: skip
    out.append(_recall(config, ex, "recall", "shows any stored result of this session again, "
                       "in full"))  # fmt: skip
    return out


def _claude(config: Config, active: Active) -> list[Claim]:
    ex = _ex(config)
    w = config["window.lines"]
    aside = "a Read has its window"
    if active.shows_at_most:
        from ctxview.rules.cap import fit

        fitted = [f"{tool}'s: {fit(config, n)['cap.max_chars']:,}" for tool, n in
                  sorted(active.shows_at_most.items())
                  if fit(config, n)["cap.max_chars"] < config["cap.max_chars"]]  # fmt: skip
        if fitted:
            aside = f"{', '.join(fitted)}, what Claude Code sends whole"
    out = [
        _ids("at the start of the result, or, where Claude Code keeps its own text, in the hook "
             "context right after it"),
        Claim("reads", "**Read.** Claude Code numbers the lines; the bracket is the line before "
              "the first one shown (line 0 from line 1): the path, the lines shown, the file's "
              "length in lines, the first digits of its content's SHA-256: "
              f"`{ex['bracket']}` (an empty file: `{ex['empty']}`). A Read shows at most {w} "
              "lines from its offset; read on with `offset` the next line.",
              (ex["bracket"], ex["empty"])),
        _unchanged(ex),
        Claim("same-search", "**Same search twice.** Grep or Glob with the same arguments, or a "
              "Bash command that is one plain `rg`, `grep`, `ag`, `find`, `fd`, `ls` or `tree` "
              "(no pipe, `;`, `&`, redirection, `$` or backquote), giving the same output again, "
              f"is `{ex['same']}` Changed output is shown in full; any other command's output "
              "twice is two results.", (ex["same"],)),
        _cap(config, ex, "Bash, Grep, Glob, WebFetch, Agent and MCP tool output", aside,
             *_saved(active)),
        Claim("edits", "**Edits.** Edit, MultiEdit, Write and NotebookEdit answer with Claude "
              "Code's sentence; the hook context after it gives the id and the unified diff "
              f"under a bracket with the path and the new content's hash: `{ex['diff']}`; a new "
              f"file: `{ex['created']}`", (ex["diff"], ex["created"])),
        Claim("beside", "**Other tools** whose output Claude Code renders itself (Agent's launch "
              "notice, WebSearch, TodoWrite, …) keep it; the id follows in the hook context: "
              "`[#a3f2] is the id of this Agent result.`",
              ("[#a3f2] is the id of this Agent result.",)),
    ]  # fmt: skip
    if "PostToolUseFailure" in active.hooks:
        failed = "[#e5a0] is the id of this failed Bash call's output."
        out.append(Claim("failed", "**Failed calls** keep Claude Code's error; the id follows in "
                         f"the hook context: `{failed}`", (failed,)))  # fmt: skip
    if "UserPromptSubmit" in active.hooks:
        note = "[#c0de] is the id of the result in this task notification."
        out.append(Claim("reports", "**Background tasks** (an Agent, a command) report later in "
                         "a `<task-notification>`; the hook context after it gives its result's "
                         f"id: `{note}`", (note,)))  # fmt: skip
    if "SessionStart" in active.hooks:
        out.append(_table(ex, "the hook's table follows the summary", " Files Claude Code "
                          "attaches again after a summary have no id."))  # fmt: skip
    else:
        out.append(_unseen_compaction())
    out.append(_recall(config, ex, "mcp__ctxview__recall", "shows any stored result of this "
                       "session again, in full"))  # fmt: skip
    return out


def _saved(active: Active) -> tuple[str, tuple[str, ...]]:
    """What Claude Code does itself with an output past its own limit (Bash: it saves it)."""
    past = active.saved_past.get("Bash")
    if past is None:
        return "", ()
    note = "Output too large (48.8KB). Full output saved to:"
    text = (
        f" But a Bash output over {past:,} characters Claude Code saves to a file itself: it "
        f"sends `{note} …` and a 2 KB preview, which starts with the id; the id holds the "
        f"first {past:,} characters, Read the file for the rest."
    )
    return text, (note,)


def _table(ex: dict[str, str], lead: str, after: str = "") -> Claim:
    return Claim("summary", f"**After a summary.** When the conversation is compacted, {lead}: "
                 f"`{ex['table']}`, the path, lines, hash and result id of each file's newest "
                 "read. Their content is no longer in front of you: read the file again (it is "
                 f"shown in full) or recall the result by its id.{after}",
                 (ex["table"],))  # fmt: skip


def _unseen_compaction() -> Claim:
    return Claim("summary", "**After a summary.** The host compacts the conversation on its own, "
                 "unseen here: after a summary a stub can name a result that is no longer in "
                 "front of you; recall it by its id.")  # fmt: skip


def _recall_only(config: Config, name: str) -> list[Claim]:
    ex = _ex(config)
    return [
        Claim("ids", "Results this session stored have ids such as `#a3f2`."),
        _recall(config, ex, name, "shows a stored result of this session again, in full"),
    ]


def _names(tools: list[str]) -> str:
    quoted = [f"`{t}`" for t in tools]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
