"""The hook engine on Claude Code's hook inputs (the shapes 2.1.328 sends, recorded from the real
client), the hook client's promise never to print on failure, and what an import of a hooked
transcript adds. Real store, real files, real processes; no Claude Code needed here."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import bash_turn

from ctxview.agents import failures
from ctxview.agents.claude_code.hooks import HookEngine
from ctxview.agents.hook_client import default_store, private_folder, socket_path, stop
from ctxview.engine.session import Session
from ctxview.importers.runner import import_file
from ctxview.store import Writer
from ctxview.store.paths import default_store_path

SID = "5e55-1011"


def base(tmp_path: Path, **more: Any) -> dict[str, Any]:
    return {"session_id": SID, "cwd": str(tmp_path / "proj"),
            "transcript_path": str(tmp_path / "none.jsonl"), **more}  # fmt: skip


def read_input(tmp_path: Path, path: Path, ref: str) -> dict[str, Any]:
    content = path.read_text()
    lines = content.split("\n")
    return base(tmp_path, hook_event_name="PostToolUse", tool_name="Read", tool_use_id=ref,
                tool_input={"file_path": str(path)},
                tool_response={"type": "text", "file": {
                    "filePath": str(path), "content": content, "numLines": len(lines),
                    "startLine": 1, "totalLines": len(lines)}})  # fmt: skip


def bash_input(tmp_path: Path, command: str, stdout: str, ref: str) -> dict[str, Any]:
    return base(tmp_path, hook_event_name="PostToolUse", tool_name="Bash", tool_use_id=ref,
                tool_input={"command": command, "description": "x"},
                tool_response={"stdout": stdout, "stderr": "", "interrupted": False,
                               "isImage": False, "noOutputExpected": False})  # fmt: skip


def updated(out: dict[str, Any] | None) -> Any:
    assert out is not None
    return out["hookSpecificOutput"]["updatedToolOutput"]


async def test_read_keeps_claude_codes_numbers_and_a_reread_is_the_stub(engine, tmp_path):
    f = tmp_path / "proj" / "a.py"
    f.write_text("x = 1\ny = 2\n")
    first = updated(await engine.handle("PostToolUse", read_input(tmp_path, f, "t1")))
    # Claude Code counts 3 lines (the empty one after the last newline); the rules count 2.
    assert first["file"]["startLine"] == 0 and first["file"]["numLines"] == 3
    head, rest = first["file"]["content"].split("\n", 1)
    assert head.startswith(f"[#1000 {f} lines 1-2 of 2 sha ") and rest == "x = 1\ny = 2"
    again = updated(await engine.handle("PostToolUse", read_input(tmp_path, f, "t2")))
    assert again["file"]["numLines"] == 1 and again["file"]["startLine"] == 0
    assert again["file"]["content"].endswith("] Unchanged since #1000, which already shows "
                                             "lines 1-2.")  # fmt: skip
    # The store keeps exactly what the model reads: Claude Code's rendering of those lines.
    conn = sqlite3.connect(engine.store)
    shown = dict(conn.execute("SELECT rid, shown FROM bodies").fetchall())
    assert shown[0x1000] == f"0\t{head}\n1\tx = 1\n2\ty = 2"
    f.write_text("x = 3\ny = 2\n")  # changed on disk: a full read again
    third = updated(await engine.handle("PostToolUse", read_input(tmp_path, f, "t3")))
    assert third["file"]["content"].startswith("[#1002 ") and "Unchanged" not in str(third)


async def test_bash_is_capped_and_a_search_through_bash_is_the_same_result_stub(engine, tmp_path):
    long = "\n".join(str(i) for i in range(1, 1001))
    out = updated(
        await engine.handle("PostToolUse", bash_input(tmp_path, "seq 1 1000", long, "b1"))
    )
    assert out["stdout"].startswith("[#1000]\n1\n") and "lines elided, full output #1000]" in out[
        "stdout"] and out["stderr"] == ""  # fmt: skip
    grep = "a.py:1:x = 1"
    one = updated(await engine.handle("PostToolUse", bash_input(tmp_path, "rg -n x", grep, "b2")))
    two = updated(await engine.handle("PostToolUse", bash_input(tmp_path, "rg -n x", grep, "b3")))
    assert one["stdout"] == f"[#1001]\n{grep}" and two["stdout"] == "[#1002] Same result as #1001."
    # Not a search: the same command twice is two full results.
    a = updated(await engine.handle("PostToolUse", bash_input(tmp_path, "date", "now", "b4")))
    b = updated(await engine.handle("PostToolUse", bash_input(tmp_path, "date", "now", "b5")))
    assert (a["stdout"], b["stdout"]) == ("[#1003]\nnow", "[#1004]\nnow")


async def test_an_edit_answers_with_its_id_and_diff_as_context(engine, tmp_path):
    f = tmp_path / "proj" / "a.py"
    f.write_text("x = 2\n")
    edit = base(tmp_path, hook_event_name="PostToolUse", tool_name="Edit", tool_use_id="e1",
                tool_input={"file_path": str(f), "old_string": "x = 1", "new_string": "x = 2"},
                tool_response={"filePath": str(f), "oldString": "x = 1", "newString": "x = 2",
                               "originalFile": "x = 1\n", "structuredPatch": []})  # fmt: skip
    out = await engine.handle("PostToolUse", edit)
    assert out is not None
    hso = out["hookSpecificOutput"]
    assert "updatedToolOutput" not in hso  # Claude Code's own sentence stays
    assert hso["additionalContext"].startswith(f"[#1000 {f} sha ")
    assert "-x = 1" in hso["additionalContext"] and "+x = 2" in hso["additionalContext"]
    g = tmp_path / "proj" / "new.txt"
    g.write_text("hello\n")
    write = base(
        tmp_path,
        hook_event_name="PostToolUse",
        tool_name="Write",
        tool_use_id="w1",
        tool_input={"file_path": str(g), "content": "hello\n"},
        tool_response={"type": "create", "filePath": str(g), "content": "hello\n"},
    )
    ctx = (await engine.handle("PostToolUse", write))["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith(f"[#1001 {g} sha ") and "Created, 1 line." in ctx
    f.write_text("x = 3\ny = 4\n")
    multi = base(tmp_path, hook_event_name="PostToolUse", tool_name="MultiEdit", tool_use_id="m1",
                 tool_input={"file_path": str(f), "edits": [
                     {"old_string": "x = 2", "new_string": "x = 3\ny = 4"}]},
                 tool_response={"filePath": str(f), "originalFile": "x = 2\n",
                                "structuredPatch": []})  # fmt: skip
    ctx = (await engine.handle("PostToolUse", multi))["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith(f"[#1002 {f} sha ") and "+y = 4" in ctx and "-x = 2" in ctx


async def test_other_tools_are_generic_and_ctxviews_own_pass(engine, tmp_path):
    text = base(
        tmp_path,
        hook_event_name="PostToolUse",
        tool_name="mcp__other__thing",
        tool_use_id="m1",
        tool_input={},
        tool_response="plain text",
    )
    assert updated(await engine.handle("PostToolUse", text)) == "[#1000]\nplain text"
    blocks = base(tmp_path, hook_event_name="PostToolUse", tool_name="Agent", tool_use_id="a1",
                  tool_input={"prompt": "p"},
                  tool_response={"content": [{"type": "text", "text": "found it"}],
                                 "totalDurationMs": 5})  # fmt: skip
    out = updated(await engine.handle("PostToolUse", blocks))
    assert out["content"] == [{"type": "text", "text": "[#1001]\nfound it"}]
    assert out["totalDurationMs"] == 5
    odd = base(tmp_path, hook_event_name="PostToolUse", tool_name="WebSearch", tool_use_id="w1",
               tool_input={}, tool_response={"results": [1, 2]})  # fmt: skip
    ctx = (await engine.handle("PostToolUse", odd))["hookSpecificOutput"]
    assert ctx == {
        "hookEventName": "PostToolUse",
        "additionalContext": "[#1002] is the id of this WebSearch result.",
    }
    conn = sqlite3.connect(engine.store)
    shown, stored = conn.execute("SELECT shown, stored FROM bodies WHERE rid = ?",
                                 (0x1002,)).fetchone()  # fmt: skip
    assert shown == ctx["additionalContext"] and json.loads(stored) == {"results": [1, 2]}
    own = base(
        tmp_path,
        hook_event_name="PostToolUse",
        tool_name="mcp__ctxview__recall",
        tool_use_id="r1",
        tool_input={"id": "#1000"},
        tool_response="[#1003 recall …]",
    )
    assert await engine.handle("PostToolUse", own) is None


def tool_input(tmp_path: Path, tool: str, args: dict[str, Any], response: Any,
               ref: str) -> dict[str, Any]:  # fmt: skip
    return base(tmp_path, hook_event_name="PostToolUse", tool_name=tool, tool_use_id=ref,
                tool_input=args, tool_response=response)  # fmt: skip


def grep_lines(n: int) -> str:
    return "\n".join(f"src/m{i % 40}.py:{i}:    value_{i} = compute({i})" for i in range(n))


def stored(engine: HookEngine, rid: int) -> tuple[str, str]:
    conn = sqlite3.connect(engine.store)
    try:
        return conn.execute("SELECT shown, stored FROM bodies WHERE rid = ?", (rid,)).fetchone()
    finally:
        conn.close()


async def test_a_grep_of_long_lines_is_capped_to_fit_claude_codes_own_limit(engine, tmp_path):
    """Claude Code sends a Grep result of over 20,000 characters as a 2 KB preview: the cap is
    fitted under that, so the model gets the head, the elision line and the tail."""
    wide = "\n".join(f"src/w{i}.py:{i}: " + "z" * 180 for i in range(300))  # 300 lines, 57k chars
    args = {"pattern": "z", "output_mode": "content"}
    resp = {"mode": "content", "numFiles": 300, "filenames": [], "content": wide, "numLines": 300}
    got = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Grep", args, resp,
                                                                "w1")))  # fmt: skip
    assert len(got["content"]) <= 20_000
    assert "lines elided, full output #1000]" in got["content"]
    assert got["content"].endswith("z" * 180)  # the tail is there
    assert stored(engine, 0x1000) == (got["content"], wide)
    # Bash keeps the spec's bounds (Claude Code shows up to 50,000 characters of it).
    bash = updated(
        await engine.handle(
            "PostToolUse",
            tool_input(
                tmp_path, "Bash", {"command": "cat wide.txt"}, {"stdout": wide, "stderr": ""}, "w2"
            ),
        )
    )
    assert 20_000 < len(bash["stdout"]) <= 31_000  # fmt: skip


async def test_grep_is_a_search_capped_and_the_same_result_stub_in_every_mode(engine, tmp_path):
    """Grep's output (2.1.328: {mode, numFiles, filenames, content, numLines, …}) goes back in
    content mode, whose `content` Claude Code sends as it is: the id, the cap, the stub."""
    big = grep_lines(3000)
    args = {"pattern": "value_", "output_mode": "content", "-n": True, "head_limit": 0}
    resp = {"mode": "content", "numFiles": 0, "filenames": [], "content": big,
            "numLines": 3000, "totalLines": 3000}  # fmt: skip
    one = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Grep", args, resp,
                                                                "g1")))  # fmt: skip
    assert one["mode"] == "content" and one["content"].startswith("[#1000]\nsrc/m0.py:0:")
    assert "[2700 lines elided, full output #1000]" in one["content"]
    assert one["content"].endswith("value_2999 = compute(2999)")
    assert one["numLines"] == one["content"].count("\n") + 1 == 302
    assert stored(engine, 0x1000) == (one["content"], big)  # in full, before the cap
    two = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Grep", args, resp,
                                                                "g2")))  # fmt: skip
    assert two["content"] == "[#1001] Same result as #1000."
    # The default mode, file names: Claude Code's "Found N files" text is the result.
    args = {"pattern": "compute"}
    names = {"mode": "files_with_matches", "filenames": ["src/a.py", "src/b.py"], "numFiles": 2,
             "totalFiles": 2, "appliedLimit": 250}  # fmt: skip
    three = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Grep", args, names,
                                                                  "g3")))  # fmt: skip
    assert three["content"] == "[#1002]\nFound 2 files limit: 250\nsrc/a.py\nsrc/b.py"
    assert "appliedLimit" not in three and three["filenames"] == names["filenames"]
    # Another result for the same call (a file changed): in full again, never a stub.
    changed = {**names, "filenames": ["src/a.py"], "numFiles": 1, "totalFiles": 1}
    four = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Grep", args, changed,
                                                                 "g4")))  # fmt: skip
    assert four["content"] == "[#1003]\nFound 1 file limit: 250\nsrc/a.py"
    count = {"mode": "count", "numFiles": 2, "filenames": [], "content": "a.py:3\nb.py:1",
             "numMatches": 4}  # fmt: skip
    five = updated(await engine.handle("PostToolUse", tool_input(
        tmp_path, "Grep", {"pattern": "x", "output_mode": "count"}, count, "g5")))  # fmt: skip
    assert five["content"] == ("[#1004]\na.py:3\nb.py:1\n\nFound 4 total occurrences across 2 "
                               "files.")  # fmt: skip
    none = {"mode": "files_with_matches", "filenames": [], "numFiles": 0, "timedOut": True}
    six = updated(await engine.handle("PostToolUse", tool_input(
        tmp_path, "Grep", {"pattern": "zzz"}, none, "g6")))  # fmt: skip
    assert six["content"].startswith("[#1005]\nThe search stopped before it finished")
    assert six["content"].endswith("\n\nNo files found") and "timedOut" not in six


async def test_glob_is_a_search_its_names_one_a_line(engine, tmp_path):
    """Glob (2.1.328: {filenames, numFiles, truncated, durationMs, …}): Claude Code sends the
    names one a line, so the 3.0.0 text goes back as the names."""
    names = [f"src/pkg/module_{i:04d}.py" for i in range(100)]
    resp = {"filenames": names, "numFiles": 100, "truncated": True, "durationMs": 12,
            "totalMatches": 3000, "countIsComplete": True}  # fmt: skip
    args = {"pattern": "**/*.py"}
    one = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Glob", args, resp,
                                                                "l1")))  # fmt: skip
    assert one["filenames"][0] == "[#1000]" and one["filenames"][1:101] == names
    assert one["filenames"][-1] == (
        "(Showing 100 of 3000 matching files; 2900 more are not "
        "listed. Narrow the pattern or path to see the rest.)"
    )
    assert one["truncated"] is False and one["durationMs"] == 12  # no note of Claude Code's
    two = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Glob", args, resp,
                                                                "l2")))  # fmt: skip
    assert two["filenames"] == ["[#1001] Same result as #1000."]
    # Over the cap (a Glob without Claude Code's own limit of 100): capped.
    many = {"filenames": [f"f{i}.txt" for i in range(1000)], "numFiles": 1000,
            "truncated": False, "durationMs": 30}  # fmt: skip
    three = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Glob", {
        "pattern": "*.txt"}, many, "l3")))  # fmt: skip
    assert three["filenames"][:2] == ["[#1002]", "f0.txt"] and three["filenames"][-1] == "f999.txt"
    assert "[700 lines elided, full output #1002]" in three["filenames"]
    empty = {"filenames": [], "numFiles": 0, "truncated": False, "durationMs": 1}
    four = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "Glob", {
        "pattern": "*.none"}, empty, "l4")))  # fmt: skip
    assert four["filenames"] == ["[#1003]", "No files found"]
    # LS (before 2.1 Claude Code answered with the listing's text): a listing too.
    ls = "- /proj/\n  - a.py\n  - b.py\n"
    assert updated(await engine.handle("PostToolUse", tool_input(
        tmp_path, "LS", {"path": "/proj"}, ls, "s1"))) == f"[#1004]\n{ls}"  # fmt: skip
    assert (
        updated(
            await engine.handle(
                "PostToolUse", tool_input(tmp_path, "LS", {"path": "/proj"}, ls, "s2")
            )
        )
        == "[#1005] Same result as #1004."
    )


async def test_webfetch_is_capped_and_never_a_stub(engine, tmp_path):
    """WebFetch (2.1.328: {bytes, code, codeText, result, durationMs, url}): Claude Code sends
    `result`; a page fetched twice is two results (§6 is for searches only)."""
    page = "\n".join(f"Paragraph {i}: the answer the prompt asked for." for i in range(600))
    resp = {"bytes": 123456, "code": 200, "codeText": "OK", "result": page, "durationMs": 800,
            "url": "https://example.com/doc", "citable": True}  # fmt: skip
    args = {"url": "https://example.com/doc", "prompt": "summarise"}
    one = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "WebFetch", args, resp,
                                                                "w1")))  # fmt: skip
    assert one["result"].startswith("[#1000]\nParagraph 0:")
    assert "[300 lines elided, full output #1000]" in one["result"]
    assert "citable" not in one and one["code"] == 200 and one["url"] == resp["url"]
    assert stored(engine, 0x1000)[1] == page
    two = updated(await engine.handle("PostToolUse", tool_input(tmp_path, "WebFetch", args, resp,
                                                                "w2")))  # fmt: skip
    assert two["result"].startswith("[#1001]\nParagraph 0:")


async def test_a_notebook_edit_answers_with_its_id_and_the_notebooks_diff(engine, tmp_path):
    nb = tmp_path / "proj" / "n.ipynb"

    def notebook(source: str) -> str:
        return json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "id": "c1",
                        "metadata": {},
                        "source": [source],
                        "outputs": [],
                        "execution_count": None,
                    }
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        )

    before, after = notebook("x = 1"), notebook("x = 2")
    nb.write_text(after)
    payload = tool_input(tmp_path, "NotebookEdit", {
        "notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 2"}, {
        "new_source": "x = 2", "old_source": "x = 1", "cell_id": "c1", "cell_type": "code",
        "language": "python", "edit_mode": "replace", "notebook_path": str(nb),
        "original_file": before, "updated_file": after}, "n1")  # fmt: skip
    hso = (await engine.handle("PostToolUse", payload))["hookSpecificOutput"]
    assert "updatedToolOutput" not in hso  # "Updated cell c1 with x = 2" stays
    ctx = hso["additionalContext"]
    assert ctx.startswith(f"[#1000 {nb} sha ") and '-    "x = 1"' in ctx and '+    "x = 2"' in ctx
    failed = {
        **payload,
        "tool_use_id": "n2",
        "tool_response": {
            **payload["tool_response"],
            "error": 'Cell with ID "c9" not found in notebook.',
        },
    }
    hso = (await engine.handle("PostToolUse", failed))["hookSpecificOutput"]
    assert hso["additionalContext"] == "[#1001] is the id of this NotebookEdit result."


def test_the_hook_command_caps_and_stubs_a_grep(tmp_path: Path) -> None:
    """Through the command Claude Code runs: a 3,000-line Grep twice."""
    store = tmp_path / "store.db"
    (tmp_path / "proj").mkdir()
    resp = {"mode": "content", "numFiles": 0, "filenames": [], "content": grep_lines(3000),
            "numLines": 3000}  # fmt: skip
    args = {"pattern": "value_", "output_mode": "content"}
    try:
        outs = []
        for ref in ("g1", "g2"):
            done, _ = _client(store, json.dumps(tool_input(tmp_path, "Grep", args, resp,
                                                           ref)).encode())  # fmt: skip
            assert done.returncode == 0 and done.stderr == b""
            outs.append(json.loads(done.stdout)["hookSpecificOutput"]["updatedToolOutput"])
        assert outs[0]["content"].startswith("[#1000]\n")
        assert "[2700 lines elided, full output #1000]" in outs[0]["content"]
        assert outs[1]["content"] == "[#1001] Same result as #1000."
    finally:
        stop(store)


async def test_a_failed_call_is_stored_and_its_id_given_beside_the_error(engine, tmp_path):
    failed = base(
        tmp_path,
        hook_event_name="PostToolUseFailure",
        tool_name="Bash",
        tool_use_id="f1",
        tool_input={"command": "ls nope"},
        error="Exit code 2\nls: cannot access 'nope': No such file or directory",
    )
    out = await engine.handle("PostToolUseFailure", failed)
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUseFailure",
            "additionalContext": "[#1000] is the id of this failed Bash call's output.",
        }
    }
    conn = sqlite3.connect(engine.store)
    assert conn.execute("SELECT stored FROM bodies").fetchone()[0] == failed["error"]
    interrupted = {**failed, "tool_use_id": "f2", "is_interrupt": True}
    assert await engine.handle("PostToolUseFailure", interrupted) is None


async def test_another_writer_in_between_is_caught_up(engine, tmp_path):
    """The MCP server (another process) recalls between two hooks: ids never collide, and what
    it wrote counts for the rules (here: its read makes the hook's read a stub)."""
    f = tmp_path / "proj" / "a.py"
    f.write_text("x = 1\n")
    await engine.handle("PostToolUse", bash_input(tmp_path, "true", "", "b1"))
    async with await Writer.open(engine.store) as other:
        session = await Session.resume(other, f"cc-{SID}")
        recalled = await session.run("recall", {"id": "#1000"})
        read = await session.run("read", {"path": str(f)})
    assert recalled.startswith("[#1001 recall #1000") and read.startswith("[#1002 ")
    out = updated(await engine.handle("PostToolUse", read_input(tmp_path, f, "t2")))
    assert out["file"]["content"].startswith("[#1003 ")
    assert "Unchanged since #1002" in out["file"]["content"]


async def test_compaction_records_the_boundary_empties_the_table_and_sends_it(engine, tmp_path):
    f = tmp_path / "proj" / "a.py"
    f.write_text("x = 1\n")
    await engine.handle("SessionStart", base(tmp_path, hook_event_name="SessionStart",
                                             source="startup"))  # fmt: skip
    await engine.handle("PostToolUse", read_input(tmp_path, f, "t1"))
    await engine.handle("PreCompact", base(tmp_path, hook_event_name="PreCompact",
                                           trigger="manual"))  # fmt: skip
    out = await engine.handle("SessionStart", base(tmp_path, hook_event_name="SessionStart",
                                                   source="compact"))  # fmt: skip
    table = out["hookSpecificOutput"]["additionalContext"]
    assert table.startswith("## Files read before this summary")
    assert f"| {f} | 1-1 of 1 |" in table and table.endswith("| #1000 |")
    again = updated(await engine.handle("PostToolUse", read_input(tmp_path, f, "t2")))
    assert "Unchanged" not in again["file"]["content"]  # the dedupe table was emptied
    conn = sqlite3.connect(engine.store)
    kinds = [r[0] for r in conn.execute("SELECT kind FROM events ORDER BY seq")]
    assert kinds.count("compaction") == 1


async def test_a_sub_agents_tools_go_to_its_own_session(engine, tmp_path):
    out = await engine.handle("PostToolUse", {**bash_input(tmp_path, "ls", "a.py", "s1"),
                                              "agent_id": "ag1"})  # fmt: skip
    assert updated(out)["stdout"] == "[#1000]\na.py"
    conn = sqlite3.connect(engine.store)
    row = conn.execute("SELECT id, parent_session FROM sessions").fetchone()
    assert row == ("cc-ag1", f"cc-{SID}")


async def test_an_import_of_a_hooked_transcript_adds_messages_never_results(engine, tmp_path):
    """Here the hook did not import the transcript itself (it was not there yet): a later
    import lands in the same session and adds the messages and usage only."""
    transcript = tmp_path / "t.jsonl"
    payload = {**bash_input(tmp_path, "ls", "a.py", "toolu_1"), "transcript_path": str(transcript)}
    shown = updated(await engine.handle("PostToolUse", payload))["stdout"]
    ts = "2026-12-01T07:00:0{}Z"
    common = {"sessionId": SID, "cwd": str(tmp_path / "proj"), "isSidechain": False}
    records = [
        *bash_turn(SID, tmp_path / "proj", "list files", shown),
        {**common, "type": "assistant", "uuid": "u4", "timestamp": ts.format(4),
         "message": {"id": "msg_2", "role": "assistant", "model": "m",
                     "content": [{"type": "text", "text": "There is a.py."}],
                     "usage": {"input_tokens": 20, "output_tokens": 5}}},
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    await import_file(engine.writer, transcript)
    await engine.writer.flush()
    conn = sqlite3.connect(engine.store)
    assert conn.execute("SELECT id FROM sessions").fetchall() == [(f"cc-{SID}",)]
    rows = conn.execute("SELECT kind, role, rid, text FROM events ORDER BY seq").fetchall()
    assert [r[2] for r in rows if r[0] == "result"] == [0x1000]
    assert ("message", "assistant", None, "There is a.py.") in rows
    assert ("message", "user", None, "list files") in rows


def test_the_hook_clients_store_path_is_the_stores(tmp_path: Path, monkeypatch) -> None:
    for env in ({"CTXVIEW_STORE": str(tmp_path / "s.db")}, {"XDG_STATE_HOME": str(tmp_path)}, {}):
        for k in ("CTXVIEW_STORE", "XDG_STATE_HOME"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert default_store() == default_store_path()


def _client(store: Path, stdin: bytes, **env: str) -> tuple[subprocess.CompletedProcess[bytes],
                                                             float]:  # fmt: skip
    t = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ctxview.agents.hook_client", "post-tool-use",
         "--store", str(store)], input=stdin, capture_output=True, timeout=30,
        env={**os.environ, **env},
    )  # fmt: skip
    return done, time.monotonic() - t


def test_the_client_prints_nothing_on_failure_and_records_it(tmp_path: Path) -> None:
    store = tmp_path / "state" / "store.db"
    try:
        done, _ = _client(store, b"not json")
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert "the hook input is not JSON" in failures.read(store)[-1]["error"]
        payload = json.dumps(bash_input(tmp_path, "ls", "a", "x1")).encode()
        done, _ = _client(store, payload, CTXVIEW_HOOK_FAIL="1")
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert failures.read(store)[-1]["tool_name"] == "Bash"
        # The store is a file that is not a store: the engine fails, the hook prints nothing.
        _stop(store)
        for extra in ("-wal", "-shm"):
            Path(f"{store}{extra}").unlink(missing_ok=True)
        store.write_text("not a database, clearly " * 100)
        done, took = _client(store, payload)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert took < 2.5 and len(failures.read(store)) >= 3
    finally:
        stop(store)


def test_a_locked_store_costs_at_most_the_budget(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    (tmp_path / "proj").mkdir()
    payload = json.dumps(bash_input(tmp_path, "ls", "a", "x1")).encode()
    try:
        done, _ = _client(store, payload)  # starts the engine and the session
        assert json.loads(done.stdout)["hookSpecificOutput"]["updatedToolOutput"]["stdout"] == (
            "[#1000]\na")  # fmt: skip
        lock = sqlite3.connect(store, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        try:
            done, took = _client(store, payload.replace(b"x1", b"x2"))
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        assert (done.returncode, done.stdout) == (0, b"") and took < 2.3
        assert "locked" in failures.read(store)[-1]["error"]
        done, _ = _client(store, payload.replace(b"x1", b"x3"))  # and it recovers
        assert b"[#1001]" in done.stdout
    finally:
        stop(store)


def _engines(store: Path) -> list[int]:
    """The pids of the resident engines serving `store` (zombies are gone: their files are)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b"ctxview.agents.daemon" in argv and str(store).encode() in argv and (
                state != "Z"):  # fmt: skip
            pids.append(int(proc.name))
    return pids


def _stop(store: Path) -> None:
    """Stop the store's engine: when `stop` returns, the engine is gone and its store closed."""
    assert stop(store)
    assert _engines(store) == [] and not socket_path(store).exists()


def test_the_engine_starts_on_demand_and_stop_ends_it(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    (tmp_path / "proj").mkdir()
    done, _ = _client(store, json.dumps(bash_input(tmp_path, "ls", "a", "x1")).encode())
    assert b"[#1000]" in done.stdout and socket_path(store).exists()
    assert len(_engines(store)) == 2  # the engine and its supervisor
    _stop(store)
    assert not stop(store)


def test_stop_returns_once_the_engine_has_released_the_store(tmp_path: Path) -> None:
    """The engine closes its store before its socket goes, and `stop` waits for the process to
    end: right after it returns, the store's WAL is checkpointed and removed (its last
    connection closed), so nothing the engine does can still write the store (an old engine's
    close once checkpointed its WAL over a store replaced after the stop)."""
    store = tmp_path / "store.db"
    (tmp_path / "proj").mkdir()
    for i in range(3):
        done, _ = _client(store, json.dumps(bash_input(tmp_path, "ls", "a", f"x{i}")).encode())
        assert b"[#100" in done.stdout
    assert Path(f"{store}-wal").exists() and _engines(store)
    assert stop(store)
    assert _engines(store) == [] and not Path(f"{store}-wal").exists()
    assert not socket_path(store).exists()


def test_the_socket_folder_must_be_private(tmp_path: Path) -> None:
    folder = tmp_path / "sock"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    private_folder(str(folder))
    folder.chmod(0o755)  # readable by others: someone else's socket could sit there
    with pytest.raises(PermissionError):
        private_folder(str(folder))
    (tmp_path / "link").symlink_to(folder)
    folder.chmod(0o700)
    with pytest.raises(PermissionError):
        private_folder(str(tmp_path / "link"))


async def test_a_task_notifications_report_is_stored_and_its_id_given(engine, tmp_path):
    """UserPromptSubmit of a background task's `<task-notification>`: the report (its
    `<result>`) is a result with an id, given as the prompt's context; once only."""
    note = ("<task-notification>\n<task-id>ab12</task-id>\n<tool-use-id>toolu_9</tool-use-id>\n"
            "<status>completed</status>\n<summary>Agent \"x\" finished</summary>\n"
            "<result>line one\n</result> is text\nline three</result>\n<usage><tool_uses>1"
            "</tool_uses></usage>\n</task-notification>")  # fmt: skip
    ask = base(tmp_path, hook_event_name="UserPromptSubmit", prompt=note, prompt_id="p-1")
    out = await engine.handle("UserPromptSubmit", ask)
    context = "[#1000] is the id of the result in this task notification."
    assert out == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                          "additionalContext": context}}  # fmt: skip
    assert await engine.handle("UserPromptSubmit", ask) == out  # the same prompt: the same id
    plain = base(tmp_path, hook_event_name="UserPromptSubmit", prompt="fix it", prompt_id="p-2")
    assert await engine.handle("UserPromptSubmit", plain) is None
    conn = sqlite3.connect(engine.store)
    rows = conn.execute("SELECT e.tool, e.call_ref, b.stored FROM events e JOIN bodies b"
                        " ON b.rid = e.rid WHERE e.kind = 'result'").fetchall()  # fmt: skip
    (args,) = conn.execute("SELECT args FROM events WHERE kind = 'call'").fetchone()
    conn.close()
    report = "line one\n</result> is text\nline three"
    assert rows == [("task-notification", "task-notification:p-1", report)]
    assert json.loads(args) == {"task_id": "ab12", "tool_use_id": "toolu_9",
                                "status": "completed", "summary": 'Agent "x" finished'}  # fmt: skip
