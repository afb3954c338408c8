"""A hook that fails never breaks Claude Code: it prints nothing, so the model gets Claude Code's
own outputs, the session finishes, and `ctxview doctor` shows what failed."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from claude_helpers import needs_claude, project, tool_results
from fake_anthropic import FakeAnthropic

from ctxview.store import Writer

pytestmark = [needs_claude, pytest.mark.e2e]


def _steps(root: Path) -> list[dict]:
    return [
        {"tool": "Read", "input": {"file_path": str(root / "a.txt")}},
        {"tool": "Bash", "input": {"command": "seq 1 600", "description": "count"}},
        {"text": "Finished."},
    ]


def _own_outputs(got: dict[str, str]) -> None:
    read, seq = (got[k] for k in sorted(got))
    assert read == "1\tone\n2\ttwo\n3\t"  # Claude Code's own numbering, no bracket
    assert seq == "\n".join(str(i) for i in range(1, 601))  # uncapped, no id


def test_a_failing_hook_leaves_claude_code_its_own_outputs(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        (p.root / "a.txt").write_text("one\ntwo\n")
        assert p.ctxview("install", "claude-code").returncode == 0

        # A failure forced inside the hook.
        with FakeAnthropic(_steps(p.root)) as api:
            result = p.claude(api.url, "look", CTXVIEW_HOOK_FAIL="1")
            got = tool_results(api.main_requests[-1])
        assert result["result"] == "Finished." and not result["is_error"]
        _own_outputs(got)
        doctor = p.ctxview("doctor")
        assert doctor.returncode == 1
        assert "failure forced by CTXVIEW_HOOK_FAIL" in doctor.stdout
        assert "PostToolUse Read" in doctor.stdout and "PostToolUse Bash" in doctor.stdout
        assert p.ctxview("doctor", "--clear").returncode == 1
        assert "hook failures: none" in p.ctxview("doctor").stdout

        # A real one: the store is locked by another process for the whole run.
        asyncio.run(_make_store(p.store))
        lock = sqlite3.connect(p.store, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        try:
            with FakeAnthropic(_steps(p.root)) as api:
                result = p.claude(api.url, "look again")
                got = tool_results(api.main_requests[-1])
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        assert result["result"] == "Finished." and not result["is_error"]
        _own_outputs(got)
        doctor = p.ctxview("doctor")
        assert doctor.returncode == 1 and "database is locked" in doctor.stdout, doctor.stdout

        # Nothing of that session reached the store; its transcript imports as a finished one.
        sid = result["session_id"]
        conn = sqlite3.connect(p.store)
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        transcript = next((p.home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
        assert p.ctxview("import", str(transcript)).returncode == 0
        row = conn.execute("SELECT id, ended FROM sessions").fetchone()
        conn.close()
        assert row[0] == f"cc-{sid}" and row[1] is not None


async def _make_store(path: Path) -> None:
    writer = await Writer.open(path)
    await writer.close()
