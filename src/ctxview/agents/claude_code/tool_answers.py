"""What the model gets for each Claude Code tool: a PostToolUse (or PostToolUseFailure, or a
task notification's UserPromptSubmit) input through the engine's rules, as the hook's output.
The hook engine (`hooks.py`) calls these with the session up to date and its writer holding the
call's events.

What the model gets, per tool (README "Use it with Claude Code / Codex" has the table):
- Read: Claude Code numbers `file.content` from `file.startLine` itself, so the bracket goes in
  as the line before the content and `startLine` one less: `0\t[#1000 a.py lines 1-3 of 3 sha
  …]`, `1\t…`. An unchanged re-read is the one-line stub at that place. Claude Code reads a
  whole file when no limit is given: the rules' read window (2000 lines) applies here
  (`importers.claude_code.read_lines`), the rest a read away with `offset`.
- Bash: `stdout` becomes the engine's text (id, output capped, `stderr` after `stdout`); a plain
  `rg`/`grep`/`find`/`ls` (the Codex importer's classification) is a search, so the same search
  with the same output is the same-result stub.
- Grep, Glob (and LS, before 2.1): searches. The text Claude Code would send (built as its own
  rendering builds it from the output's fields) is the result: capped, and the same call with
  the same text again is the same-result stub. It goes back where Claude Code sends a field as
  it is: Grep in content mode (`content`), Glob as its `filenames`, one a line.
- WebFetch: `result` becomes the engine's text (id, capped); never a stub (§6 is for searches).
- Edit, MultiEdit, Write, NotebookEdit: Claude Code's own answer names the file (or the cell)
  only, so the id and the diff go as the hook's `additionalContext`, which follows the result.
- Anything else: a string output or a `content` list of text blocks is replaced by the capped
  generic text; another shape keeps its output and gets its id as `additionalContext`.
- `mcp__ctxview__*`: untouched (the MCP server already answered through the engine).
- A background task's report (UserPromptSubmit of a `<task-notification>`): stored, its id as
  the prompt's context.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import stat
import time
from typing import Any

from ctxview.agents.claude_code.edits import before_patch, edited
from ctxview.agents.claude_code.payload import HookError
from ctxview.engine.result import Result
from ctxview.engine.session import Session
from ctxview.files import safe_fs
from ctxview.files.regular import read_regular
from ctxview.importers.claude_code import NOTIFICATION_TOOL, read_lines, task_notification
from ctxview.importers.codex import _search_tool
from ctxview.store.probe import Probe
from ctxview.tools import ToolError

_EDITS = {"Edit": "edit", "MultiEdit": "multiedit", "Write": "write"}
# Claude Code's searches as the engine's `dedupe.by_result` tools (LS: versions before 2.1).
_SEARCHES = {"Grep": "grep", "Glob": "glob", "LS": "list"}
_TOOL_NAMES = {"Bash": "bash", "Read": "read", "NotebookEdit": "edit", **_EDITS, **_SEARCHES}
# The line Claude Code (2.1.328) puts before a search's results when its time limit stopped it.
_STOPPED = (
    "The search stopped before it finished, most likely at its time limit, so these "
    "results are incomplete: more matches may exist. Search a more specific path or "
    "pattern."
)
# Grep fields Claude Code turns into text around `content`: in our answer that text is already
# part of the result, so they go.
_GREP_NOTES = ("appliedLimit", "appliedOffset", "timedOut")
# The longest result Claude Code 2.1.328 sends as it is, per tool (its maxResultSizeChars; Bash's
# is its 30,000-character output limit, applied again to what the hook gives back); a longer one
# reaches the model as a 2 KB preview, so the cap is fitted under it.
SHOWS_AT_MOST = {"Grep": 20_000, "Bash": 30_000}
_SHOWS_AT_MOST_ELSE = 50_000
# A Bash output longer than this (2.1.328's default `bashOutputMaxChars`) Claude Code saves to a
# file before any hook sees it: the hook gets, and stores, its note and preview.
SAVED_PAST = {"Bash": 30_000}
# The most of a file a hook reads (an edited file, a read file's hash): past it, the file is
# not read (the model still gets its id; an edit's diff comes from Claude Code's own strings).
MAX_FILE_BYTES = 64 << 20


async def post_tool_use(session: Session, p: dict[str, Any]) -> dict[str, Any] | None:
    name = str(p["tool_name"])
    args = _table(p.get("tool_input"))
    resp = p.get("tool_response")
    ref = p.get("tool_use_id") if isinstance(p.get("tool_use_id"), str) else None
    if name == "Read" and isinstance(resp, dict) and resp.get("type") == "text":
        return _post(await _read_tool(session, args, resp, ref))
    if name == "Bash" and isinstance(resp, dict) and isinstance(resp.get("stdout"), str):
        if resp.get("isImage"):
            return None
        return _post(await _bash(session, args, resp, ref))
    if name in _EDITS and isinstance(resp, dict):
        shown = await _edit(session, name, args, resp, ref)
        if shown is not None:
            return _post(None, shown)
    if name == "NotebookEdit" and isinstance(resp, dict):
        shown = await _notebook(session, args, resp, ref)
        if shown is not None:
            return _post(None, shown)
    if name in ("Grep", "Glob") and isinstance(resp, dict) and _names(resp.get("filenames")):
        return _post(await _search(session, name, args, resp, ref))
    if name == "LS" and isinstance(resp, str):  # a listing (LS answered with its text)
        return _post(
            await session.insert(
                "list", args, resp, call_ref=ref, seen=len(resp), shows_at_most=_shows_at_most(name)
            )
        )
    if name == "WebFetch" and isinstance(resp, dict) and isinstance(resp.get("result"), str):
        text = resp["result"]
        shown = await session.insert(
            name, args, text, call_ref=ref, seen=len(text), shows_at_most=_shows_at_most(name)
        )
        # Claude Code sends `result` as it is; `citable` would cut it into search-result
        # blocks of its own.
        return _post({**_without(resp, "citable"), "result": shown})
    return await _generic(session, name, args, resp, ref)


async def _read_tool(
    session: Session, args: dict[str, Any], resp: dict[str, Any], ref: str | None
) -> dict[str, Any]:
    file = resp.get("file")
    if not isinstance(file, dict) or not isinstance(file.get("content"), str):
        raise HookError("a Read output without file.content")
    path = str(file.get("filePath") or args.get("file_path") or "")
    key = session.key(path)
    window = session.config["window.lines"]
    told = read_lines(file, args, window)  # what Claude Code says it read, for the check
    # In a thread: a big file's hash must not hold up the other sessions' hooks.
    sha, real_total = await asyncio.to_thread(
        _file_facts, session, path, told.first, told.lines, told.total
    )
    # The lines the rules show: within the read window, whole, counted as the rules count
    # them (the import replays a transcript's Read through the same function).
    got = read_lines(file, args, window, real_total)
    first, lines, total = got.first, got.lines, got.total
    content = "\n".join(lines)
    start = first - 1
    given: dict[str, Any] = {}

    def claude_form(result: Result) -> str:
        """Claude Code numbers `file.content` from `startLine`: the bracket (or the stub)
        goes in as line `start`, before Claude Code's own lines."""
        if result.rkind == "full" and lines:
            given["content"] = result.shown.split("\n", 1)[0] + "\n" + content
            given["num"] = len(lines) + 1
        else:  # the stub, or an empty file's bracket: one line
            given["content"], given["num"] = result.shown, 1
        return "\n".join(
            f"{start + i}\t{line}" for i, line in enumerate(given["content"].split("\n"))
        )

    await session.insert_read(
        {"path": path, **_without(args, "file_path")},
        path,
        key,
        first,
        lines,
        total,
        sha,
        call_ref=ref,
        seen=len(file["content"]),
        ts=time.time(),
        host_form=claude_form,
        own=real_total is not None,  # else `sha` is a stand-in
    )
    return {
        **resp,
        "file": {**file, "content": given["content"], "numLines": given["num"], "startLine": start},
    }


async def _bash(
    session: Session, args: dict[str, Any], resp: dict[str, Any], ref: str | None
) -> dict[str, Any]:
    command = c if isinstance(c := args.get("command"), str) else ""
    output = resp["stdout"]
    stderr = resp.get("stderr")
    if isinstance(stderr, str) and stderr:
        output = f"{output}\n{stderr}" if output else stderr
    tool = _search_tool(command) or "bash"
    shown = await session.insert(
        tool,
        {"command": command},
        output,
        call_ref=ref,
        seen=len(output),
        shows_at_most=_shows_at_most("Bash"),
    )
    return {**resp, "stdout": shown, "stderr": ""}


async def _edit(
    session: Session, name: str, args: dict[str, Any], resp: dict[str, Any], ref: str | None
) -> str | None:
    """Edit, MultiEdit, Write: the diff of what Claude Code reports it did (its original
    and its strings, or its patch), never of a file the input names; the file is read only
    when the report lacks the text (`_readable`)."""
    path = resp.get("filePath") or args.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    texts = edited(name, args, resp)
    if texts is None:  # no original in the report (a file too large to include)
        after = await asyncio.to_thread(_readable, session, path, args, resp)
        before = before_patch(after, resp.get("structuredPatch")) if after else None
        if before is None or after is None:
            return None  # stored as it is, its id beside Claude Code's answer
        texts = (before, after)
    old, new = texts
    return await session.insert_edit(
        _EDITS[name],
        {"path": path, **_without(args, "file_path")},
        [(path, session.key(path), old, new)],
        call_ref=ref,
        seen=len(json.dumps(resp, default=str)),
    )


async def _notebook(
    session: Session, args: dict[str, Any], resp: dict[str, Any], ref: str | None
) -> str | None:
    """NotebookEdit: Claude Code's answer is built from the cell ("Updated cell … with …"),
    so, as for an edit, the id and the diff of the notebook file go as context: the file
    before and after as Claude Code reports them."""
    path = resp.get("notebook_path") or args.get("notebook_path")
    old, new = resp.get("original_file"), resp.get("updated_file")
    if resp.get("error") or not isinstance(path, str) or not isinstance(old, str):
        return None  # a failed edit: stored, its id beside Claude Code's error
    if not isinstance(new, str):
        new = await asyncio.to_thread(_readable, session, path, args, resp)
    if new is None:
        return None
    return await session.insert_edit(
        "edit",
        {"path": path, **_without(args, "notebook_path")},
        [(path, session.key(path), old, new)],
        call_ref=ref,
        seen=len(json.dumps(resp, default=str)),
    )


def _readable(
    session: Session, path: str, args: dict[str, Any], resp: dict[str, Any]
) -> str | None:
    """The text of a file an edit's report names, when the hook may read it: a regular
    file inside the session's working folder, or the file Claude Code says it just wrote
    (the report's path is the input's); never a FIFO or a device, at most MAX_FILE_BYTES.
    None otherwise. Runs in a thread."""
    data = _project_file(session, path)
    given = args.get("file_path", args.get("notebook_path"))
    if data is None and given == path and os.path.isabs(path):
        with contextlib.suppress(OSError):
            data = read_regular(path, MAX_FILE_BYTES)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def _search(
    session: Session, name: str, args: dict[str, Any], resp: dict[str, Any], ref: str | None
) -> dict[str, Any]:
    """Grep and Glob: the text Claude Code would send is the result of a search (§6: the
    same call with the same result again is the same-result stub, §3: capped), and the
    3.0.0 text goes back in a form Claude Code sends exactly as it is."""
    text = _grep_text(resp) if name == "Grep" else _glob_text(resp)
    shown = await session.insert(
        _SEARCHES[name],
        args,
        text,
        call_ref=ref,
        seen=len(text),
        shows_at_most=_shows_at_most(name),
    )
    if name == "Grep":  # in content mode Grep sends `content` alone
        return {
            **{k: v for k, v in resp.items() if k not in _GREP_NOTES},
            "mode": "content",
            "content": shown,
            "numLines": shown.count("\n") + 1,
        }
    # Glob sends its file names one a line (and a note when truncated or stopped)
    return {**_without(resp, "timedOut"), "filenames": shown.split("\n"), "truncated": False}


async def failed(session: Session, p: dict[str, Any]) -> dict[str, Any] | None:
    """A tool that failed (a command's non-zero exit, an edit whose string is not there):
    Claude Code sends the model its error and lets a hook add context only, so the error
    is stored in full and the model gets its id beside it."""
    error = p.get("error")
    if not isinstance(error, str) or p.get("is_interrupt"):
        return None
    name = str(p["tool_name"])
    args = _table(p.get("tool_input"))
    ref = p.get("tool_use_id") if isinstance(p.get("tool_use_id"), str) else None
    return await _beside(
        session,
        _TOOL_NAMES.get(name, name),
        args,
        error,
        ref,
        f"the id of this failed {name} call's output",
    )


async def _beside(
    session: Session, tool: str, args: dict[str, Any], text: str, ref: str | None, what: str
) -> dict[str, Any]:
    """Store `text` in full as a result whose shown text is the one line the model gets
    beside Claude Code's own output: `[#id] is <what>.`"""
    shown = await session.insert_beside(
        tool, args, text, lambda rid: f"[{rid}] is {what}.", call_ref=ref, seen=len(text)
    )
    return _post(None, shown, event="PostToolUseFailure" if "failed" in what else "PostToolUse")


async def _generic(
    session: Session, name: str, args: dict[str, Any], resp: Any, ref: str | None
) -> dict[str, Any] | None:
    blocks = resp.get("content") if isinstance(resp, dict) else None
    if isinstance(resp, str):
        text = resp
    elif (
        isinstance(blocks, list)
        and blocks
        and all(isinstance(b, dict) and b.get("type") == "text" for b in blocks)
    ):
        text = "\n".join(str(b.get("text", "")) for b in blocks)
    else:  # a shape whose text we cannot replace: stored, its id given beside it
        # (the model keeps Claude Code's own rendering and gets the id line after it)
        text = json.dumps(resp, ensure_ascii=False, default=str)
        return await _beside(session, name, args, text, ref, f"the id of this {name} result")
    shown = await session.insert(
        name, args, text, call_ref=ref, seen=len(text), shows_at_most=_shows_at_most(name)
    )
    if isinstance(resp, str):
        return _post(shown)
    return _post({**resp, "content": [{"type": "text", "text": shown}]})


async def prompt(session: Session, p: dict[str, Any], probe: Probe) -> dict[str, Any] | None:
    """A prompt that is a background task's `<task-notification>` (Claude Code 2.1.328 runs
    an Agent call in the background by default; its report comes later as a prompt, where
    no PostToolUse sees it): the report is stored under an id, and the model gets the id as
    the prompt's context. Claude Code's own text of it stays (a hook can only add to a
    prompt). Any other prompt: nothing."""
    prompt = p.get("prompt")
    note = task_notification(prompt)
    if note is None or not isinstance(prompt, str):
        return None
    prompt_id = p.get("prompt_id") if isinstance(p.get("prompt_id"), str) else None
    ref = note.ref(prompt_id, prompt)
    rid = probe.result_of_call(session.id, ref)
    if rid is not None:  # already stored (an import of the transcript was first)
        shown = note.line(session.ref(rid))
    else:
        shown = await session.insert_beside(
            NOTIFICATION_TOOL, note.args(), note.report, note.line, call_ref=ref, seen=len(prompt)
        )
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": shown}}


def _post(updated: Any, context: str | None = None, event: str = "PostToolUse") -> dict[str, Any]:
    out: dict[str, Any] = {"hookEventName": event}
    if updated is not None:
        out["updatedToolOutput"] = updated
    if context:
        out["additionalContext"] = context
    return {"hookSpecificOutput": out}


def _table(value: Any) -> dict[str, Any]:
    """A JSON object from the hook input, {} for anything else."""
    return value if isinstance(value, dict) else {}


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _shows_at_most(tool: str) -> int:
    return SHOWS_AT_MOST.get(tool, _SHOWS_AT_MOST_ELSE)


def _plural(n: int, word: str) -> str:
    return word if n == 1 else f"{word}s"


def _pagination(limit: Any, offset: Any) -> str:
    parts = [f"limit: {limit}"] if limit is not None else []
    if offset:
        parts.append(f"offset: {offset}")
    return ", ".join(parts)


def _grep_text(resp: dict[str, Any]) -> str:
    """What Claude Code 2.1.328 sends the model for a Grep output (its
    `mapToolResultToToolResultBlockParam`, mode by mode)."""
    mode = resp.get("mode") or "files_with_matches"
    head = f"{_STOPPED}\n\n" if resp.get("timedOut") else ""
    offset = resp.get("appliedOffset")
    page = _pagination(resp.get("appliedLimit"), offset)
    content = resp.get("content") if isinstance(resp.get("content"), str) else ""
    if mode == "content":
        body = content or (
            "No entries at this offset"
            if offset and (resp.get("totalLines") or 0) > 0
            else "No matches found"
        )
        return head + (f"{body}\n\n[Showing results with pagination = {page}]" if page else body)
    if mode == "count":
        matches, files = _whole(resp.get("numMatches"), 0), _whole(resp.get("numFiles"), 0)
        body = content or ("No entries at this offset" if matches > 0 else "No matches found")
        return (
            f"{head}{body}\n\nFound {matches} total {_plural(matches, 'occurrence')} across "
            f"{files} {_plural(files, 'file')}.{f' with pagination = {page}' if page else ''}"
        )
    files = _whole(resp.get("numFiles"), 0)
    if files == 0:
        if offset and (resp.get("totalFiles") or 0) > 0:
            return f"{head}No entries at this offset. [Showing results with pagination = {page}]"
        return f"{head}No files found"
    names = "\n".join(resp["filenames"])
    return f"{head}Found {files} {_plural(files, 'file')}{f' {page}' if page else ''}\n{names}"


def _glob_text(resp: dict[str, Any]) -> str:
    """What Claude Code 2.1.328 sends the model for a Glob output."""
    head = f"{_STOPPED}\n\n" if resp.get("timedOut") else ""
    names: list[str] = list(resp["filenames"])
    if not names:
        return f"{head}No files found"
    if resp.get("truncated"):
        total = resp.get("totalMatches")
        if not isinstance(total, int):
            names.append("(Results are truncated. Consider using a more specific path or pattern.)")
        elif resp.get("countIsComplete"):
            names.append(
                f"(Showing {len(names)} of {total} matching files; "
                f"{total - len(names)} more are not listed. Narrow the pattern or path "
                "to see the rest.)"
            )
        else:
            names.append(
                f"(Showing the first {len(names)} files; there are more than {total} "
                "matches. Narrow the pattern or path to see the rest.)"
            )
    return head + "\n".join(names)


def _whole(value: Any, default: int) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else default


def _without(args: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k != key}


def _file_facts(
    session: Session, path: str, first: int, lines: list[str], total: int
) -> tuple[str, int | None]:
    """The file's real SHA-256 and number of lines as the rules count them (the hook runs right
    after the read), when the hook may read it: a regular file inside the session's working
    folder, or one that holds exactly the lines Claude Code reports it read there (so nothing
    of a file the model was not shown gets in). Otherwise, or when it cannot be read any more,
    a stand-in hash that changes with the path, the lines shown and the length, and None."""
    data = _project_file(session, path)
    if data is None and os.path.isabs(path):
        with contextlib.suppress(OSError):
            found = read_regular(path, MAX_FILE_BYTES)
            if _holds(found, first, lines):
                data = found
    if data is None:
        shown = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()
        stand_in = f"ctxview-hook\0{path}\0{first}\0{shown}\0{total}"
        return hashlib.sha256(stand_in.encode("utf-8", "surrogatepass")).hexdigest(), None
    count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return hashlib.sha256(data).hexdigest(), count


def _holds(data: bytes, first: int, lines: list[str]) -> bool:
    """Whether the file's lines from `first` are `lines` (a `\r` before `\n` not counted)."""
    text = data.decode("utf-8", "replace").split("\n")
    window = [line.removesuffix("\r") for line in text[first - 1 : first - 1 + len(lines)]]
    return bool(lines) and window == [line.removesuffix("\r") for line in lines]


def _project_file(session: Session, path: str) -> bytes | None:
    """The bytes of `path` when it is a regular file inside the session's working folder (a
    folder of `/` holds nothing: it would hold every file), opened one component at a time
    without following links and never waiting (`tools.safe_fs`), at most MAX_FILE_BYTES; None
    otherwise."""
    ws = session.workspace
    if ws.real == os.sep:
        return None
    try:
        key = ws.resolve(path)
        st = safe_fs.lstat(ws.real, key)
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        return safe_fs.read(ws.real, key)
    except (ToolError, OSError, ValueError):
        return None
