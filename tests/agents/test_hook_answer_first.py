"""A tool call's hook answers before the transcript is read (issue 16 §2b): the call never waits
for Claude Code's record of it to reach the file, nor for the import; the message that made the
call still lands before the call's events in the store, and the call's result once, whatever
Claude Code wrote meanwhile. Real store, real files; no Claude Code needed here."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import bash_turn

from ctxview.agents.claude_code.hooks import HookEngine

SID = "a11f-0002"


def _hook(tmp_path: Path, transcript: Path, ref: str, stdout: str) -> dict[str, Any]:
    return {"session_id": SID, "cwd": str(tmp_path / "proj"), "transcript_path": str(transcript),
            "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": ref,
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False,
                              "isImage": False}}  # fmt: skip


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _events(store: Path) -> list[tuple[str, str | None, int | None]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute("SELECT kind, role, rid FROM events ORDER BY seq").fetchall()
    finally:
        conn.close()


async def _records_come(engine: HookEngine, transcript: Path, call: dict[str, Any],
                        result: dict[str, Any], shown: str) -> None:  # fmt: skip
    """The call's record and its result's (showing `shown`) written to the transcript after the
    answer: the call's events are stored once, in order, the result under the id it was given."""
    result["message"]["content"][0]["content"] = shown
    result["toolUseResult"]["stdout"] = shown
    with transcript.open("a") as f:
        f.write(_lines([call, result]))
    await engine.settled()
    kinds = [(k, r) for k, r, _ in _events(engine.store) if k in ("message", "call", "result")]
    assert kinds == [("message", "user"), ("message", "assistant"), ("call", None),
                     ("result", None)], kinds  # fmt: skip
    assert [rid for k, _, rid in _events(engine.store) if k == "result"] == [0x1000]


async def test_the_answer_comes_before_the_record_and_the_order_is_kept(engine, tmp_path):
    """Claude Code has not written the assistant record yet when the hook comes (the race that
    made test_claude_real fail 1 in 3): the answer does not wait for it; once it is written, the
    message goes in first, then the call and its result, and the transcript's own record of the
    result (written right after the answer) is not a second result."""
    transcript = tmp_path / f"{SID}.jsonl"
    prompt, call, result = bash_turn(SID, tmp_path / "proj", "list files", "")
    transcript.write_text(_lines([prompt]))
    t = time.monotonic()
    out = await engine.respond("PostToolUse", _hook(tmp_path, transcript, "toolu_1", "a.py"))
    took = time.monotonic() - t
    shown = out["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert shown == "[#1000]\na.py" and took < 0.25  # the old wait alone was 0.3 s
    assert [e for e in _events(engine.store) if e[0] == "result"] == []  # stored after
    # Claude Code writes the call's record late, and the result's right after the answer.
    await _records_come(engine, transcript, call, result, shown)


async def test_the_ids_an_answer_gives_are_taken_before_it_is_sent(engine, tmp_path):
    """The answer's id is in the store's counter before the answer goes: a writer beside the
    hook (the MCP server, an import) never gives it, even while the call's events wait for the
    transcript."""
    transcript = tmp_path / f"{SID}.jsonl"
    prompt, _, _ = bash_turn(SID, tmp_path / "proj", "list files", "")
    transcript.write_text(_lines([prompt]))  # the call's record never comes
    out = await engine.respond("PostToolUse", _hook(tmp_path, transcript, "toolu_1", "a.py"))
    assert out["hookSpecificOutput"]["updatedToolOutput"]["stdout"].startswith("[#1000]")
    assert _next_rid(engine.store) > 0x1000  # (a few ahead while the lane imports)
    await engine.settled()  # the record did not come: the events go in after the wait
    assert [rid for k, _, rid in _events(engine.store) if k == "result"] == [0x1000]
    assert _next_rid(engine.store) == 0x1001  # the ones not given went back


def _next_rid(store: Path) -> int:
    conn = sqlite3.connect(store)
    try:
        return int(conn.execute("SELECT next_rid FROM sessions").fetchone()[0])
    finally:
        conn.close()


async def test_an_import_beside_the_hook_waits_for_the_calls_events(engine, tmp_path,
                                                                    monkeypatch):  # fmt: skip
    """`ctxview import` (another process) reads the call's result in the transcript while the
    hook, which answered, has not stored the call yet: the import waits for the session's lock
    and then skips the result the hook stored, rather than adding it a second time."""
    import asyncio
    import subprocess
    import sys

    transcript = tmp_path / f"{SID}.jsonl"
    prompt, call, result = bash_turn(SID, tmp_path / "proj", "list files", "")
    transcript.write_text(_lines([prompt, call]))
    slow = asyncio.Event()
    real = engine._transcripts._import

    async def late(*args: Any, **kw: Any) -> None:  # the step is slow after its answer
        await slow.wait()
        await real(*args, **kw)

    monkeypatch.setattr(engine._transcripts, "_import", late)
    out = await engine.respond("PostToolUse", _hook(tmp_path, transcript, "toolu_1", "a.py"))
    shown = out["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    result["message"]["content"][0]["content"] = shown
    result["toolUseResult"]["stdout"] = shown
    with transcript.open("a") as f:
        f.write(_lines([result]))
    ctxview = Path(sys.executable).with_name("ctxview")
    other = await asyncio.create_subprocess_exec(
        str(ctxview), "--store", str(engine.store), "import", str(transcript),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    await asyncio.sleep(1.0)  # it is waiting for the lock by now (or still starting)
    slow.set()
    await engine.settled()
    _, err = await asyncio.wait_for(other.communicate(), 60)
    assert other.returncode == 0, err
    assert [rid for k, _, rid in _events(engine.store) if k == "result"] == [0x1000]


async def test_a_deep_line_naming_the_call_never_loses_its_events(engine, tmp_path):
    """A transcript line nested 100,000 levels deep that names the call (hostile, or a tool's
    odd output) is passed over by the wait for the call's record (no depth raises): the call's
    events are stored once, after the record that made it."""
    transcript = tmp_path / f"{SID}.jsonl"
    prompt, call, result = bash_turn(SID, tmp_path / "proj", "list files", "")
    deep = "[" * 100_000 + '"toolu_1"' + "]" * 100_000
    transcript.write_text(_lines([prompt]) + f'{{"type": "user", "x": {deep}}}\n')
    out = await engine.respond("PostToolUse", _hook(tmp_path, transcript, "toolu_1", "a.py"))
    shown = out["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert shown == "[#1000]\na.py"
    await _records_come(engine, transcript, call, result, shown)


async def test_the_first_calls_events_wait_for_the_transcript_to_be_created(
        engine: HookEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The session's first call: Claude Code has not created its transcript yet when the hook
    comes (test_claude_real failed 5 in 17 at load 6-9: the first Read's result was stored at
    once, and the prompt imported later landed after it). The answer does not wait; the call's
    events wait (bounded) for the file and the call's record, so the prompt comes first."""
    import asyncio

    transcript = tmp_path / f"{SID}.jsonl"
    prompt, call, result = bash_turn(SID, tmp_path / "proj", "list files", "")
    started = asyncio.Event()
    real = engine._transcripts.follow

    async def follow(*args: Any, **kw: Any) -> None:  # the step after the answer has begun
        started.set()
        await real(*args, **kw)

    monkeypatch.setattr(engine._transcripts, "follow", follow)
    out = await engine.respond("PostToolUse", _hook(tmp_path, transcript, "toolu_1", "a.py"))
    shown = out["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert shown == "[#1000]\na.py" and not transcript.exists()
    await started.wait()  # the step is looking for the transcript: Claude Code creates it now
    assert [e for e in _events(engine.store) if e[0] == "result"] == []
    result["message"]["content"][0]["content"] = shown
    result["toolUseResult"]["stdout"] = shown
    transcript.write_text(_lines([prompt, call, result]))
    await engine.settled()
    stop = {"session_id": SID, "cwd": str(tmp_path / "proj"), "transcript_path": str(transcript),
            "hook_event_name": "Stop"}  # fmt: skip
    await engine.handle("Stop", stop)  # the rest of the transcript, as the turn ends
    kinds = [(k, r) for k, r, _ in _events(engine.store) if k in ("message", "call", "result")]
    assert kinds == [("message", "user"), ("message", "assistant"), ("call", None),
                     ("result", None)], kinds  # fmt: skip
    assert [rid for k, _, rid in _events(engine.store) if k == "result"] == [0x1000]


async def test_calls_whose_transcript_never_comes_are_stored(engine: HookEngine,
                                                              tmp_path: Path) -> None:  # fmt: skip
    """No transcript ever (Claude Code run without one): each call's events go in after the
    bounded wait, none lost, none twice."""
    transcript = tmp_path / f"{SID}.jsonl"
    for n, ref in enumerate(("toolu_1", "toolu_2")):
        out = await engine.respond("PostToolUse", _hook(tmp_path, transcript, ref, f"{n}.py"))
        assert out["hookSpecificOutput"]["updatedToolOutput"]["stdout"] == f"[#100{n}]\n{n}.py"
    await engine.settled()
    assert not transcript.exists()
    assert [rid for k, _, rid in _events(engine.store) if k == "result"] == [0x1000, 0x1001]
