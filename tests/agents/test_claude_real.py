"""The real Claude Code (2.1.328, pinned) with ctxview installed by `ctxview install
claude-code`, against a scripted Messages API: what the model is sent carries the 3.0.0 texts,
and the store holds one session with exactly those texts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from claude_helpers import Project, after_result, conversation, needs_claude, project, tool_results
from fake_anthropic import SUMMARY, FakeAnthropic

pytestmark = [needs_claude, pytest.mark.e2e]

NOTES = "".join(f"line {i} {'beta' if i % 7 == 0 else 'alpha'}\n" for i in range(1, 41))


def _mcp_ready() -> bool:
    try:
        import ctxview.agents.mcp.server  # noqa: F401
    except ImportError:
        return False
    return True


def _store_rows(store: Path) -> tuple[list[tuple], dict[int, str]]:
    conn = sqlite3.connect(store)
    try:
        sessions = conn.execute("SELECT id, source, workspace, ended FROM sessions").fetchall()
        bodies = dict(conn.execute("SELECT rid, shown FROM bodies").fetchall())
    finally:
        conn.close()
    return sessions, bodies


def _script(p: Project) -> list[dict]:
    notes = str(p.root / "notes.txt")
    steps = [
        {"tool": "Read", "input": {"file_path": notes}},
        {"tool": "Read", "input": {"file_path": notes}},
        {"tool": "Bash", "input": {"command": "seq 1 1000", "description": "count"}},
        {
            "tool": "Edit",
            "input": {
                "file_path": notes,
                "old_string": "line 3 alpha",
                "new_string": "line 3 gamma",
            },
        },
        {"tool": "Bash", "input": {"command": "grep -n beta notes.txt", "description": "find"}},
        {"tool": "Bash", "input": {"command": "grep -n beta notes.txt", "description": "again"}},
    ]
    if _mcp_ready():
        steps.append({"tool": "mcp__ctxview__recall", "input": {"id": "#1002"}})
    steps.append({"tool": "Bash", "input": {"command": "ls /no-such-dir", "description": "x"}})
    return [*steps, {"text": "All done."}]


def test_a_hooked_session_reaches_the_model_and_the_store(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        (p.root / "notes.txt").write_text(NOTES)
        done = p.ctxview("install", "claude-code", "--project")
        assert done.returncode == 0, done.stderr
        assert "added the PostToolUse hook" in done.stdout
        steps = _script(p)
        with FakeAnthropic(steps) as api:
            result = p.claude(api.url, "work on notes.txt")
            sid = result["session_id"]
            last = api.main_requests[-1]
        got = tool_results(last)
        ids = [s for _, k, s in conversation(last) if k.startswith("tool_use:")]
        assert len(got) == len(steps) - 1, ids
        calls = sorted(got)  # toolu_0001_Read … in call order
        read1, read2, seq, edit, grep1, grep2 = (got[c] for c in calls[:6])
        notes = str(p.root / "notes.txt")

        # Read: Claude Code's own numbers, the bracket as line 0.
        first = read1.split("\n")
        assert first[0].startswith(f"0\t[#1000 {notes} lines 1-40 of 40 sha ")
        assert first[1] == "1\tline 1 alpha" and first[40] == "40\tline 40 alpha"
        assert read2.startswith(f"0\t[#1001 {notes} lines 1-40 of 40 sha ")
        assert read2.endswith("] Unchanged since #1000, which already shows lines 1-40.")
        # A long command: capped, with the elision line naming the full result.
        assert seq.startswith("[#1002]\n1\n2\n")
        assert "lines elided, full output #1002]" in seq and seq.rstrip().endswith("1000")
        # An edit: Claude Code's sentence, then the id and the diff as the hook's context.
        assert "has been updated successfully" in edit
        context = "\n".join(after_result(last, calls[3]))
        assert f"[#1003 {notes} sha " in context
        assert "-line 3 alpha" in context and "+line 3 gamma" in context
        # The same search twice: the same-result stub.
        assert grep1.startswith("[#1004]\n7:line 7 beta")
        assert grep2 == "[#1005] Same result as #1004."
        if len(calls) > 6:
            assert got[calls[6]].startswith("[#1006 recall #1002 lines 1-1000 of 1000]\n1\n2\n")
        # A failed command: Claude Code's own error, its id beside it.
        failed = f"[#{0x1000 + len(calls) - 1:x}] is the id of this failed Bash call's output."
        assert got[calls[-1]].startswith("Exit code 2\nls: cannot access")
        assert f"PostToolUseFailure:Bash hook additional context: {failed}" in after_result(
            last, calls[-1])  # fmt: skip

        # The store: one session, whose texts are exactly what the model got.
        sessions, bodies = _store_rows(p.store)
        assert [s[:3] for s in sessions] == [(f"cc-{sid}", "claude-code", str(p.root))]
        assert sessions[0][3] is not None  # SessionEnd ended it
        for rid, text in zip(range(0x1000, 0x1006), (read1, read2, seq, None, grep1, grep2),
                             strict=True):  # fmt: skip
            if text is not None:
                assert bodies[rid] == text, rid
        assert f"[#1003 {notes} sha " in bodies[0x1003] and bodies[0x1003] in context
        if len(calls) > 6:
            assert bodies[0x1006] == got[calls[6]]
            # The model's recall is a result pointing at the one it recalled: a link in the
            # viewer like any other.
            conn = sqlite3.connect(p.store)
            assert conn.execute("SELECT rkind, points_to FROM events WHERE rid = ?",
                                (0x1006,)).fetchone() == ("recall", 0x1002)  # fmt: skip
            conn.close()

        # Compaction: the summary, then the files-read table after it, at the next request.
        with FakeAnthropic([{"text": "Compacted."}]) as api:
            p.claude(api.url, "/compact", "--resume", sid)
        with FakeAnthropic([{"text": "Carrying on."}]) as api:
            p.claude(api.url, "carry on", "--resume", sid)
            after = api.main_requests[-1]
        texts = "\n".join(t for _, _, t in conversation(after))
        assert SUMMARY in texts
        assert "## Files read before this summary" in texts
        assert f"| {notes} | 1-40 of 40 |" in texts and "| #1000 |" in texts
        assert "toolu_0001_Read" not in json.dumps(after["messages"])  # compacted away
        conn = sqlite3.connect(p.store)
        (compactions,) = conn.execute(
            "SELECT count(*) FROM events WHERE kind = 'compaction'").fetchone()  # fmt: skip
        (summary,) = conn.execute("SELECT text FROM events WHERE kind = 'compaction'").fetchone()
        conn.close()
        assert compactions == 1 and SUMMARY in summary

        # The transcript written under the hook was imported by it as it grew (messages, usage),
        # and an import of it adds nothing: never a second replay with other ids.
        before = _counts(p.store)
        assert before["sessions"] == 1 and before["usage"] > 0
        conn = sqlite3.connect(p.store)
        order = [
            r[0] or r[1]
            for r in conn.execute(
                "SELECT CASE WHEN kind = 'message' THEN role END, kind FROM events ORDER BY seq"
            )
        ]
        conn.close()
        assert order.index("user") < order.index("result")
        assert order.count("assistant") >= len(calls)  # each call's message, with its usage
        # ... each before the call it made: message, call, result, as the model went.
        firsts = [i for i, k in enumerate(order) if k == "call"]
        assert all(order[i - 1] in ("assistant", "result") for i in firsts), order
        assert order[firsts[0] - 1] == "assistant"
        transcript = next((p.home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
        done = p.ctxview("import", str(transcript))
        assert done.returncode == 0, done.stderr
        assert _counts(p.store) == before
        _, bodies_after = _store_rows(p.store)
        assert bodies_after == bodies


def _counts(store: Path) -> dict[str, int]:
    conn = sqlite3.connect(store)
    try:
        q = conn.execute
        return {
            "sessions": q("SELECT count(*) FROM sessions").fetchone()[0],
            "results": q("SELECT count(*) FROM events WHERE kind = 'result'").fetchone()[0],
            "messages": q("SELECT count(*) FROM events WHERE kind = 'message'").fetchone()[0],
            "compactions": q("SELECT count(*) FROM events WHERE kind = 'compaction'").fetchone()[0],
            "usage": q("SELECT count(*) FROM events WHERE data LIKE '%\"usage\"%'").fetchone()[0],
        }
    finally:
        conn.close()
