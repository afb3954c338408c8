"""`ctxview follow` / `import` of a Claude Code transcript whose session the hooks write: one
session in the list, each result once, with the id the model saw.

- The real Claude Code run first without the hooks and imported (`ctxview import`), then
  resumed with the hooks on (`ctxview install`) while `follow` runs: the hooks take the
  imported session over, so neither their own import of the transcript nor `follow` adds a
  result they stored a second time, and no stub names an id from before (the model saw none).
- A hooked session made by `ctxview mcp` before any hook named its transcript: the import of
  that transcript lands in it (not a second session `cc-<id>-<hash>`).
- A copy of a hooked session's transcript elsewhere: refused in one sentence naming the
  session, never a second replay with other ids.
- `follow` in its own process beside the hook: a result the hook did not store gets the
  session's next id, never one the hook took meanwhile (it stopped on a UNIQUE constraint).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from claude_helpers import CTXVIEW, bash_turn, needs_claude, project, tool_results
from fake_anthropic import FakeAnthropic

from ctxview.engine.session import Session
from ctxview.importers.runner import import_file
from ctxview.store import Writer

SID = "0f011011-aaaa-bbbb-cccc-123456789abc"


def _results(store: Path) -> list[tuple[str, str, int, str]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(
            "SELECT e.session, e.call_ref, e.rid, b.shown FROM events e JOIN bodies b "
            "ON b.session = e.session AND b.rid = e.rid WHERE e.kind = 'result' ORDER BY e.seq"
        ).fetchall()
    finally:
        conn.close()


class _Follow:
    """`ctxview follow --no-view PATH` running beside Claude Code, stopped with ^C."""

    def __init__(self, env: dict[str, str], path: Path, cwd: Path) -> None:
        self.proc = subprocess.Popen([str(CTXVIEW), "follow", "--no-view", str(path)], cwd=cwd,
                                     env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.lines: list[str] = []
        self.reading = threading.Thread(target=self._read, daemon=True)
        self.reading.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        self.lines.extend(self.proc.stderr)

    def stop(self, after: float = 2.0) -> str:
        # A ^C before it is following (a loaded machine's slow start) would end it non-zero.
        deadline = time.monotonic() + 60
        while not any(x.startswith("Following") for x in self.lines):
            assert self.proc.poll() is None and time.monotonic() < deadline, self.lines
            time.sleep(0.05)
        time.sleep(after)  # it has read what was appended last
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)
        self.reading.join(timeout=30)
        err = "".join(self.lines)
        assert self.proc.returncode == 0, err
        return err


@needs_claude
@pytest.mark.e2e
def test_imported_before_the_hooks_then_resumed_hooked_while_followed(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        notes = p.root / "notes.txt"
        notes.write_text("alpha\nbeta\n")
        env = {**os.environ, "HOME": str(p.home), "CTXVIEW_STORE": str(p.store)}
        read = {"tool": "Read", "input": {"file_path": str(notes)}}
        # 1. Without the hooks, imported.
        with FakeAnthropic([read, {"text": "Read it."}], prefix="a") as api:
            sid = p.claude(api.url, "read notes")["session_id"]
        [transcript] = (p.home / ".claude" / "projects").rglob(f"{sid}.jsonl")
        done = p.ctxview("import", str(transcript), env=env)
        assert done.returncode == 0, done.stderr
        assert [r[1:3] for r in _results(p.store)] == [("toolu_a0001_Read", 0x1000)]
        # 2. The hooks on, the session resumed while `follow` runs (as a user would, though
        # the README says it is not needed): the hooks take the session over.
        done = p.ctxview("install", "claude-code", "--project", env=env)
        assert done.returncode == 0, done.stderr
        follow = _Follow(env, transcript, p.root)
        steps = [read, {"tool": "Bash", "input": {"command": "echo hi", "description": "x"}},
                 {"tool": "Bash", "input": {"command": "seq 1 3", "description": "y"}},
                 {"text": "Done."}]  # fmt: skip
        try:
            with FakeAnthropic(steps, prefix="b") as api:
                p.claude(api.url, "carry on", "--resume", sid)
                got = tool_results(api.main_requests[-1])
        finally:
            follow.stop()

        conn = sqlite3.connect(p.store)
        sessions = [r[0] for r in conn.execute("SELECT id FROM sessions")]
        prompts = [r[0] for r in conn.execute(
            "SELECT text FROM events WHERE kind = 'message' AND role = 'user'")]  # fmt: skip
        conn.close()
        assert sessions == [f"cc-{sid}"]
        results = _results(p.store)
        refs = [r[1] for r in results]
        assert refs == [
            "toolu_a0001_Read",
            "toolu_b0001_Read",
            "toolu_b0002_Bash",
            "toolu_b0003_Bash",
        ]  # each result once, in order
        # The model saw no id before the hooks: the re-read is in full with its own id, not a
        # stub naming #1000.
        assert got["toolu_b0001_Read"].startswith(f"0\t[#1001 {notes} lines 1-2 of 2 sha ")
        assert got["toolu_b0002_Bash"] == "[#1002]\nhi"
        assert got["toolu_b0003_Bash"] == "[#1003]\n1\n2\n3"
        # The hooked results are stored with the ids and texts the model got.
        shown = {r[1]: (r[2], r[3]) for r in results}
        for n, ref in enumerate(refs[1:], 0x1001):
            assert shown[ref] == (n, got[ref]), ref
        assert prompts.count("read notes") == 1 and prompts.count("carry on") == 1


def _transcript(path: Path, sid: str, cwd: Path, shown: str) -> None:
    records = bash_turn(sid, cwd, "recall it", shown)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


async def test_a_hooked_session_without_its_transcript_takes_the_import(tmp_path: Path) -> None:
    """`ctxview mcp` made the hooked session (no hook had named the transcript yet)."""
    store = tmp_path / "store.db"
    writer = await Writer.open(store)
    try:
        s = await Session.start(writer, tmp_path, session_id=f"cc-{SID}", source="claude-code",
                                data=json.dumps({"hooked": True}))  # fmt: skip
        shown = await s.insert("bash", {"command": "ls"}, "a.py", call_ref="toolu_1")
        transcript = tmp_path / f"{SID}.jsonl"
        _transcript(transcript, SID, tmp_path, shown)
        report = await import_file(writer, transcript)
        await writer.flush()
    finally:
        await writer.close()
    assert report.session == f"cc-{SID}"
    conn = sqlite3.connect(store)
    assert conn.execute("SELECT id, source_path FROM sessions").fetchall() == [
        (f"cc-{SID}", str(transcript.resolve()))]  # fmt: skip
    conn.close()
    assert [(r[1], r[2]) for r in _results(store)] == [("toolu_1", 0x1000)]


def test_a_copy_of_a_hooked_transcript_is_refused(tmp_path: Path) -> None:
    """The hooked session holds the ids the model saw: a copy elsewhere would be a second
    replay with other ids. `follow` and `import` say so in one sentence."""
    import asyncio

    store = tmp_path / "store.db"
    real = tmp_path / "projects" / f"{SID}.jsonl"
    real.parent.mkdir()

    async def hooked() -> None:
        writer = await Writer.open(store)
        try:
            s = await Session.start(writer, tmp_path, session_id=f"cc-{SID}",
                                    source="claude-code", source_path=str(real),
                                    data=json.dumps({"hooked": True}))  # fmt: skip
            shown = await s.insert("bash", {"command": "ls"}, "a.py", call_ref="toolu_1")
            _transcript(real, SID, tmp_path, shown)
            await import_file(writer, real)
        finally:
            await writer.close()

    asyncio.run(hooked())
    copy = tmp_path / "backup" / f"{SID}.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(real.read_bytes())
    env = {**os.environ, "CTXVIEW_STORE": str(store)}
    for args in (["follow", "--no-view", str(copy)], ["follow", str(copy)], ["import", str(copy)],
                 ["import", str(copy.parent)]):  # fmt: skip
        done = subprocess.run([str(CTXVIEW), *args], env=env, capture_output=True, text=True,
                              timeout=30)  # fmt: skip
        assert done.returncode == 1, (args, done.stderr)
        line = done.stderr.strip().splitlines()[-1]
        assert f"cc-{SID}" in line and str(real) in line, line
        assert line.count(". ") == 0 and "Traceback" not in done.stderr, done.stderr
    conn = sqlite3.connect(store)
    assert [r[0] for r in conn.execute("SELECT id FROM sessions")] == [f"cc-{SID}"]
    conn.close()


def _records(sid: str, cwd: Path, *calls: tuple[str, str | None]) -> str:
    """A tool_use record for each call and, when its text is given, its tool_result."""
    out = []
    for n, (ref, shown) in enumerate(calls):
        common = {"sessionId": sid, "cwd": str(cwd), "isSidechain": False,
                  "timestamp": f"2026-12-01T07:01:{n:02d}Z"}  # fmt: skip
        if shown is None:
            out.append({**common, "type": "assistant", "uuid": f"a-{ref}", "message": {
                "id": f"msg-{ref}", "role": "assistant", "model": "m", "content": [
                    {"type": "tool_use", "id": ref, "name": "Bash",
                     "input": {"command": "ls"}}]}})  # fmt: skip
        else:
            out.append({**common, "type": "user", "uuid": f"u-{ref}", "message": {
                "role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": ref, "content": shown}]},
                "toolUseResult": {"stdout": shown, "stderr": ""}})  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in out)


async def test_follow_beside_the_hook_never_gives_an_id_the_hook_took(tmp_path: Path) -> None:
    """`follow` (its own writer, as its own process) reads each tool call before the hook
    stores the result; a result the hook did not store (its hook failed: Claude Code kept its
    own output) gets the session's next id, not one the hook took meanwhile."""
    from ctxview.agents.claude_code.hooks import HookEngine
    from ctxview.importers.runner import FileImporter

    store = tmp_path / "store.db"
    (tmp_path / "proj").mkdir()
    transcript = tmp_path / f"{SID}.jsonl"
    engine = HookEngine(store)
    await engine.open()
    other = await Writer.open(store)

    def hook(ref: str) -> dict:
        return {"session_id": SID, "cwd": str(tmp_path / "proj"),
                "transcript_path": str(transcript), "hook_event_name": "PostToolUse",
                "tool_name": "Bash", "tool_use_id": ref, "tool_input": {"command": "ls"},
                "tool_response": {"stdout": f"out {ref}", "stderr": "", "interrupted": False,
                                  "isImage": False}}  # fmt: skip

    try:
        follow = FileImporter(other, transcript)
        transcript.write_text(_records(SID, tmp_path, ("toolu_1", None)))
        out = await engine.handle("PostToolUse", hook("toolu_1"))
        one = out["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
        with transcript.open("a") as f:
            f.write(_records(SID, tmp_path, ("toolu_1", one), ("toolu_2", None)))
        await follow.step(live=True)  # has read toolu_2's call before its hook
        out = await engine.handle("PostToolUse", hook("toolu_2"))
        two = out["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
        assert (one, two) == ("[#1000]\nout toolu_1", "[#1001]\nout toolu_2")
        with transcript.open("a") as f:  # toolu_3's hook failed: Claude Code's own output
            f.write(_records(SID, tmp_path, ("toolu_2", two), ("toolu_3", None),
                             ("toolu_3", "out toolu_3")))  # fmt: skip
        await follow.step(live=True)
        await other.flush()
    finally:
        await other.close()
        await engine.close()
    assert [(r[1], r[2]) for r in _results(store)] == [
        ("toolu_1", 0x1000), ("toolu_2", 0x1001), ("toolu_3", 0x1002)]  # fmt: skip
