"""What the model is told (spec §9): src/ctxview/prompts/context.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engine_helpers import workspace_and_writer
from prompt_checks import assert_told, normalized, shape

from ctxview.engine.session import Session
from ctxview.prompts import CLAUDE, RECALL, Active, claims, context_block
from ctxview.rules.config import Config


def _words(text: str) -> str:
    return " ".join(text.split())


def test_context_block_explains_ids_stubs_elision_edits_table_and_recall() -> None:
    text = _words(context_block())
    for needle in ("[#a3f2]", "Unchanged since #a3f2", "Same result as #f001.",
                   "lines elided, full output #c9d0]", "[…cut]", "diff",
                   "Files read", "recall(id, offset?, limit?)", "with or without `#`"):  # fmt: skip
        assert needle in text, needle
    assert text.count("recall") >= 4


def test_context_block_numbers_are_the_config_defaults() -> None:
    cfg, text = Config(), _words(context_block())
    assert f"{cfg['cap.max_lines']} lines" in text
    assert f"{cfg['cap.max_chars']:,} characters" in text
    assert f"most {cfg['window.lines']}" in text


def test_context_block_sentences_match_the_engine() -> None:
    cfg, text = Config(), _words(context_block())
    assert cfg.text("text.no_result", ref="#ffff") in text
    assert cfg.text("text.elided", n=1234, ref="#c9d0") in text
    assert cfg.text("text.same_result", ref="#f001") in text


def test_context_block_tells_a_session_its_own_limits() -> None:
    cfg = Config({"cap.max_lines": 100, "cap.max_chars": 9000, "window.lines": 500})
    text = _words(context_block(cfg))
    assert "over 100 lines or 9,000 characters" in text
    assert "most 500" in text
    assert "400 lines" not in text


# Every claim against the engine itself (a harness that runs its tools through `Session`).

NOTES = "".join(f"line {i} {'beta' if i % 7 == 0 else 'alpha'}\n" for i in range(1, 41))
BIG = "".join(f"{i}\n" for i in range(1, 2501))


async def test_every_claim_for_the_engine_is_what_it_does(tmp_path: Path) -> None:
    files = {"notes.txt": NOTES, "big.txt": BIG, "empty.txt": "", "old.md": "gone\n"}
    async with workspace_and_writer(tmp_path, files) as (ws, writer):
        s = await Session.start(writer, ws)
        got: dict[str, str] = {}

        async def run(name: str, tool: str, **args: Any) -> str:
            got[name] = await s.run(tool, args)
            return got[name]

        await run("read", "read", path="notes.txt")
        await run("reread", "read", path="notes.txt", offset=3, limit=5)
        await run("big", "read", path="big.txt")
        await run("big-rest", "read", path="big.txt", offset=2001)
        await run("empty", "read", path="empty.txt")
        await run("grep1", "grep", pattern="beta")
        await run("grep2", "grep", pattern="beta")
        got["search1"] = await s.insert("search", {"q": "cart"}, "a.py:1: cart")
        got["search2"] = await s.insert("search", {"q": "cart"}, "a.py:1: cart")
        await run("echo1", "bash", command="echo hi")
        await run("echo2", "bash", command="echo hi")
        await run("seq", "bash", command="seq 1 3400")
        got["wide"] = await s.insert("bash", {"command": "x"}, "w" * 50_000 + "\nend")
        await run("edit", "edit", path="notes.txt", old_string="line 3 alpha",
                  new_string="line 3 gamma")  # fmt: skip
        await run("new", "write", path="new.md", content="".join(f"{i}\n" for i in range(14)))
        await run("delete", "apply_patch", patch="*** Begin Patch\n*** Delete File: old.md\n"
                  "*** End Patch")  # fmt: skip
        await run("patch", "apply_patch", patch="*** Begin Patch\n*** Update File: notes.txt\n"
                  "@@\n-line 1 alpha\n+line 1 ALPHA\n*** Add File: two.md\n+two\n"
                  "*** End Patch")  # fmt: skip
        (ws / "notes.txt").write_text("changed\n" + NOTES)
        await run("outside", "edit", path="notes.txt", old_string="changed", new_string="CH")
        await run("before", "read", path="big.txt", offset=1, limit=10)
        got["summary"] = await s.compact("The summary.")
        await run("after", "read", path="big.txt", offset=1, limit=10)
        await run("recall", "recall", id=got["seq"].split("]")[0][1:], offset=2001)
        await run("none", "recall", id="#ffff")

    cfg = Config()
    told = claims(cfg)
    block = normalized(context_block(cfg))
    assert all(normalized(c.text) in block for c in told)  # the block is these claims

    def ids() -> None:
        given = [re.match(r"\[(#[0-9a-f]{4})[ \]]", t) for k, t in got.items() if k != "summary"]
        assert all(given), got
        assert len({m[1] for m in given if m}) == len(given)  # each its own, none reused

    def reads() -> None:
        assert got["read"].split("\n")[1] == "1: line 1 alpha"
        head, *lines = got["big"].split("\n")
        assert " lines 1-2000 of 2500 sha " in head and lines[-1] == "2000: 2000"
        assert " lines 2001-2500 of 2500 sha " in got["big-rest"].split("\n")[0]
        assert " empty sha " in got["empty"]

    def unchanged() -> None:
        assert got["reread"].endswith("Unchanged since #1000, which already shows lines 1-40.")
        assert "Unchanged" not in got["after"]  # a compaction emptied the table

    def same_search() -> None:
        assert got["grep2"].endswith(f"Same result as {got['grep1'][1:6]}.")
        assert got["search2"].endswith(f"Same result as {got['search1'][1:6]}.")
        assert got["echo1"].endswith("]\nhi\n") and got["echo2"].endswith("]\nhi\n")  # two

    def cap() -> None:
        assert "\n[3100 lines elided, full output " in got["seq"]
        assert got["wide"].split("\n")[1].endswith(" […cut]")
        assert "elided" not in got["big"]  # a read has its window

    def edits() -> None:
        assert "-line 3 alpha\n+line 3 gamma" in got["edit"]
        assert got["new"].endswith("] Created, 14 lines.")
        assert re.fullmatch(r"\[#[0-9a-f]{4} old\.md deleted\]", got["delete"])
        assert re.match(r"\[#[0-9a-f]{4}\]\n\[notes\.txt sha [0-9a-f]{8}\]\n@@", got["patch"])
        assert "\n[two.md sha " in got["patch"]
        assert got["outside"].endswith("changed outside this session since "
                                       f"{got['patch'][1:6]}.")  # fmt: skip

    def summary() -> None:
        assert "## Files read before this summary" in got["summary"]
        assert "| big.txt | 2001-2500 of 2500 |" in got["summary"]

    def recall() -> None:
        assert got["recall"].split("\n")[1] == "2001"
        assert got["none"].endswith("No stored result #ffff in this session.")

    checks = {"ids": ids, "reads": reads, "unchanged": unchanged, "same-search": same_search,
              "cap": cap, "edits": edits, "summary": summary, "recall": recall}  # fmt: skip
    assert_told(told, checks, got.values())


async def test_with_elision_on_the_block_says_so_and_it_happens(tmp_path: Path) -> None:
    on = {"elide.enabled": True, "elide.threshold_chars": 2000, "elide.min_chars": 500,
          "elide.keep": 2, "elide.stride": 1}  # fmt: skip
    cfg = Config(on)
    (claim,) = [c for c in claims(cfg) if c.key == "elide"]
    assert "elide" not in {c.key for c in claims(Config())}
    assert "longer than 2,000 characters" in claim.text and "last 2 messages" in claim.text
    async with workspace_and_writer(tmp_path, {"a.txt": "x\n" * 600}) as (ws, writer):
        s = await Session.start(writer, ws, config=on)
        await s.message("user", "go")
        for _ in range(3):
            await s.run("bash", {"command": "seq 1 300"})
            await s.message("assistant", "more")
        sent = [m["text"] for m in await s.context()]
    pattern = shape(claim.examples[0])
    assert any(pattern.fullmatch(t) for t in sent), sent


def test_claude_codes_block_fits_what_it_sends_of_a_servers_instructions() -> None:
    """Claude Code 2.1.328 cuts an MCP server's instructions at 4,096 characters (its
    `CLAUDE_CODE_MAX_MCP_DESCRIPTION_LENGTH` default) and ends them `… [truncated]`: with every
    hook on, the whole block must fit."""
    from ctxview.agents.claude_code.hooks import SAVED_PAST, SHOWS_AT_MOST
    from ctxview.agents.claude_code.install import HOOKS

    every = Active(CLAUDE, hooks=frozenset(HOOKS), shows_at_most=SHOWS_AT_MOST,
                   saved_past=SAVED_PAST)  # fmt: skip
    assert len(context_block(active=every)) <= 4096
    # With only some hooks on, only what they do is said.
    some = {c.key for c in claims(active=Active(CLAUDE, hooks=frozenset({"PostToolUse"})))}
    assert {"failed", "reports"}.isdisjoint(some) and "summary" in some
    assert "hook's table" not in context_block(
        active=Active(CLAUDE, hooks=frozenset({"PostToolUse"}))
    )
    # No hook on: Claude Code's tools are not shaped, so only recall is described.
    assert {c.key for c in claims(active=Active(CLAUDE))} == {"ids", "recall"}
    assert {c.key for c in claims(active=Active(RECALL))} == {"ids", "recall"}
