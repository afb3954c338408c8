"""One lane per Claude Code session tree in the hook engine (claude_hooks._Lane): a session and
its sub-agents are answered one call at a time under the root's lock, with ids from the tree's
one counter, while the calls answered before are still being stored. Real store, real files;
no Claude Code needed here."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import bash_turn

from ctxview.agents import live
from ctxview.agents.claude_code.hooks import HookEngine
from ctxview.engine.session import Session
from ctxview.store.writer import Writer

SID = "7ee0-0016"
AGENT = "a5b6c7d"


def _base(tmp_path: Path, transcript: Path, agent: str | None, **more: Any) -> dict[str, Any]:
    return {"session_id": SID, "cwd": str(tmp_path / "proj"), "transcript_path": str(transcript),
            **({"agent_id": agent, "agent_type": "general-purpose"} if agent else {}),
            **more}  # fmt: skip


def _bash(tmp_path: Path, transcript: Path, ref: str, stdout: str, agent: str | None = None
          ) -> dict[str, Any]:  # fmt: skip
    return _base(tmp_path, transcript, agent, hook_event_name="PostToolUse", tool_name="Bash",
                 tool_use_id=ref, tool_input={"command": f"echo {ref}"},
                 tool_response={"stdout": stdout, "stderr": "", "interrupted": False,
                                "isImage": False})  # fmt: skip


def _read(tmp_path: Path, transcript: Path, path: Path, ref: str, agent: str | None = None
          ) -> dict[str, Any]:  # fmt: skip
    content = path.read_text()
    lines = content.split("\n")
    return _base(tmp_path, transcript, agent, hook_event_name="PostToolUse", tool_name="Read",
                 tool_use_id=ref, tool_input={"file_path": str(path)},
                 tool_response={"type": "text", "file": {
                     "filePath": str(path), "content": content, "numLines": len(lines),
                     "startLine": 1, "totalLines": len(lines)}})  # fmt: skip


def _results(store: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute("SELECT session, rid FROM events WHERE kind = 'result' "
                            "ORDER BY rid").fetchall()  # fmt: skip
    finally:
        conn.close()


async def _started(engine: HookEngine, tmp_path: Path) -> Path:
    """The parent's transcript (its first prompt only: no call's record ever comes, so each of
    its calls keeps the lane busy for the engine's wait for it) and its session started."""
    transcript = tmp_path / f"{SID}.jsonl"
    prompt, _, _ = bash_turn(SID, tmp_path / "proj", "use an agent", "")
    transcript.write_text(json.dumps(prompt) + "\n")
    await engine.handle(
        "SessionStart",
        _base(tmp_path, transcript, None, hook_event_name="SessionStart", source="startup"),
    )
    return transcript


async def test_a_sub_agents_call_on_a_busy_lane_takes_in_what_another_process_wrote(
    engine: HookEngine, tmp_path: Path
) -> None:
    """The lane is busy with the parent's last call (its events wait for the transcript) when
    the sub-agent's call comes: the lock was taken for the parent, not since the sub-agent's
    last step, so what another process wrote in the sub-agent's session meanwhile (the MCP
    server's read, under the tree's lock) is taken in first: Claude Code's Read of the same file
    is the unchanged stub."""
    transcript = await _started(engine, tmp_path)
    f = tmp_path / "proj" / "f.py"
    f.write_text("a = 1\nb = 2\n")
    out = await engine.handle("PostToolUse", _bash(tmp_path, transcript, "s1", "x", AGENT))
    assert out is not None
    await engine.settled()
    # Another process (ctxview mcp with its read tool) reads f.py in the sub-agent's session.
    async with live.session_lock(engine.store, f"cc-{SID}"), await Writer.open(engine.store) as w:
        other = await Session.resume(w, f"cc-{AGENT}")
        got = await other.run("read", {"path": "f.py"})
    assert got.startswith("[#1001 f.py lines 1-2 of 2 sha "), got
    parent = asyncio.create_task(
        engine.respond("PostToolUse", _bash(tmp_path, transcript, "p1", "y"))
    )
    assert (await parent)["hookSpecificOutput"]["updatedToolOutput"]["stdout"].startswith(
        "[#1002]")  # fmt: skip
    lane = engine._lanes[f"cc-{SID}"]
    assert lane.worker is not None  # busy: the parent's call waits for its record
    out = await engine.respond("PostToolUse", _read(tmp_path, transcript, f, "s2", AGENT))
    assert out is not None
    shown = out["hookSpecificOutput"]["updatedToolOutput"]["file"]["content"]
    assert "Unchanged since #1001" in shown, shown
    await engine.settled()
    assert _results(engine.store) == [
        (f"cc-{AGENT}", 0x1000),
        (f"cc-{AGENT}", 0x1001),
        (f"cc-{SID}", 0x1002),
        (f"cc-{AGENT}", 0x1003),
    ]


async def test_a_parents_and_its_sub_agents_calls_never_share_an_id(
    engine: HookEngine, tmp_path: Path
) -> None:
    """Calls of the parent and of two sub-agents all at once, answered before they are stored:
    every id is given once in the tree, each answer's id is the stored result's, and the
    store's counter is past every id given."""
    transcript = await _started(engine, tmp_path)
    calls = [(f"c{i}", [None, AGENT, "b9c8d7e"][i % 3]) for i in range(12)]
    outs = await asyncio.gather(*(engine.respond("PostToolUse", _bash(
        tmp_path, transcript, ref, f"out {ref}", agent)) for ref, agent in calls))  # fmt: skip
    given = [int(o["hookSpecificOutput"]["updatedToolOutput"]["stdout"][2:6], 16) for o in outs]
    assert sorted(given) == list(range(0x1000, 0x1000 + len(calls))), given
    await engine.settled()
    stored = _results(engine.store)
    assert sorted(rid for _, rid in stored) == sorted(given)
    sessions = {ref: f"cc-{agent or SID}" for ref, agent in calls}
    assert sorted(stored) == sorted(
        (sessions[ref], rid) for (ref, _), rid in zip(calls, given, strict=True)
    )


async def test_a_call_that_fails_before_its_answer_gives_its_id_back_to_the_tree(
    engine: HookEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sub-agent's call whose ids could not be made durable (the store stayed locked past the
    budget) fails before its answer (Claude Code keeps its own output): the id it took goes back
    to the tree's counter, so the parent's next call gets it, and nothing is stored twice."""
    transcript = await _started(engine, tmp_path)
    real = engine._reserve
    fails = [True]

    async def locked(*args: Any, **kw: Any) -> None:
        if fails.pop(0) if fails else False:
            raise sqlite3.OperationalError("database is locked")
        await real(*args, **kw)

    monkeypatch.setattr(engine, "_reserve", locked)
    with pytest.raises(sqlite3.OperationalError):
        await engine.respond("PostToolUse", _bash(tmp_path, transcript, "s1", "x", AGENT))
    out = await engine.respond("PostToolUse", _bash(tmp_path, transcript, "p1", "y"))
    assert out["hookSpecificOutput"]["updatedToolOutput"]["stdout"] == "[#1000]\ny"
    out = await engine.respond("PostToolUse", _bash(tmp_path, transcript, "s2", "z", AGENT))
    assert out["hookSpecificOutput"]["updatedToolOutput"]["stdout"] == "[#1001]\nz"
    await engine.settled()
    assert _results(engine.store) == [(f"cc-{SID}", 0x1000), (f"cc-{AGENT}", 0x1001)]
