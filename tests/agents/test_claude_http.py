"""Claude Code's http hooks and the resident engine behind them (issue 16 §2c): only the person
may post into the engine (a secret, loopback only); a dead engine costs a tool call nothing (the
call keeps Claude Code's own output at once) and is recorded; the engine comes back. Real
Claude Code, real engine processes, real sockets."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import needs_claude, project, tool_results
from fake_anthropic import FakeAnthropic

from ctxview.agents import endpoint, failures
from ctxview.agents.hook_client import stop

SID = "0ff1ce00-1111-2222-3333-444455556666"


def _post(ep: endpoint.Endpoint, body: dict[str, Any], headers: dict[str, str],
          path: str = "/hook/PostToolUse") -> tuple[int, bytes]:  # fmt: skip
    conn = http.client.HTTPConnection(endpoint.LOOPBACK, ep.port, timeout=10)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={
            "Content-Type": "application/json", **headers})  # fmt: skip
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _health(ep: endpoint.Endpoint) -> int | None:
    """The engine's pid when it answers, else None."""
    try:
        status, body = _get(ep)
    except OSError:
        return None
    return int(json.loads(body)["engine"]) if status == 200 else None


def _get(ep: endpoint.Endpoint) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(endpoint.LOOPBACK, ep.port, timeout=5)
    try:
        conn.request("GET", "/health", headers={endpoint.HEADER: ep.secret})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _start_engine(store: Path) -> endpoint.Endpoint:
    """The store's endpoint made (as install makes it) and its engine started (as the
    SessionStart command starts it)."""
    ep = endpoint.ensure(store)
    subprocess.run([sys.executable, "-m", "ctxview.agents.hook_client", "_ping",
                    "--store", str(store)], input=b"", check=True, timeout=30)  # fmt: skip
    deadline = time.monotonic() + 30
    while _health(ep) is None:
        assert time.monotonic() < deadline, failures.read(store)
        time.sleep(0.05)
    return ep


def _bash(tmp_path: Path, ref: str) -> dict[str, Any]:
    return {"session_id": SID, "cwd": str(tmp_path), "hook_event_name": "PostToolUse",
            "transcript_path": str(tmp_path / "none.jsonl"), "tool_name": "Bash",
            "tool_use_id": ref, "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a.py", "stderr": "", "interrupted": False,
                              "isImage": False}}  # fmt: skip


def test_only_a_request_with_the_secret_is_answered(tmp_path: Path) -> None:
    store = tmp_path / "state" / "store.db"
    try:
        ep = _start_engine(store)
        for headers in (
            {},
            {endpoint.HEADER: "0" * 64},
            {endpoint.HEADER: ep.secret[:-1]},
            {endpoint.HEADER: ep.secret, "Origin": "http://127.0.0.1:8000"},
        ):
            status, body = _post(ep, _bash(tmp_path, "t1"), headers)
            assert (status, body) == (403, b""), headers
        assert any("without ctxview's hook secret was refused" in f["error"]
                   for f in failures.read(store))  # fmt: skip
        conn = http.client.HTTPConnection(endpoint.LOOPBACK, ep.port, timeout=5)
        conn.request("GET", "/health")
        assert conn.getresponse().status == 403
        conn.close()
        # Nothing of those reached the store; with the secret, the hook is answered.
        status, body = _post(ep, _bash(tmp_path, "t2"), {endpoint.HEADER: ep.secret})
        assert status == 200
        out = json.loads(body)["hookSpecificOutput"]["updatedToolOutput"]
        assert out["stdout"] == "[#1000]\na.py"
    finally:
        stop(store)


def _listening(pid: int) -> list[str]:
    """The local addresses of the TCP sockets process `pid` listens on (IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    found.append(fields[1])
    return found


def test_the_engine_listens_on_loopback_only(tmp_path: Path) -> None:
    store = tmp_path / "state" / "store.db"
    try:
        ep = _start_engine(store)
        pid = _health(ep)
        assert pid is not None
        addresses = _listening(pid)
        assert addresses == [f"0100007F:{ep.port:04X}"], addresses  # 127.0.0.1, nothing else
    finally:
        stop(store)
    # The address is not a setting: the server takes none, whatever the endpoint file says.
    path = endpoint.path(store)
    path.write_text(json.dumps({**json.loads(path.read_text()), "host": "0.0.0.0"}))
    try:
        ep = _start_engine(store)
        pid = _health(ep)
        assert pid is not None and _listening(pid) == [f"0100007F:{ep.port:04X}"]
    finally:
        stop(store)


class _Killing(FakeAnthropic):
    """The scripted API that, at its `at`-th main request, runs `then` (before answering)."""

    def __init__(self, steps: list[dict[str, Any]], at: int, then: Any) -> None:
        super().__init__(steps)
        self.at, self.then, self.mains = at, then, 0

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if body.get("tools") and "<summary>" not in json.dumps(body.get("messages", [])[-2:]):
            self.mains += 1
            if self.mains == self.at:
                self.then()
        return super().answer(body)


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _call_ms(transcript: Path) -> dict[str, float]:
    """Per call, ms from its record to its result's."""
    made: dict[str, float] = {}
    got: dict[str, float] = {}
    for line in transcript.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") not in ("assistant", "user"):
            continue
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for b in content if isinstance(content, list) else []:
            stamp = datetime.fromisoformat(rec["timestamp"].replace("Z", "+00:00")).timestamp()
            if b.get("type") == "tool_use":
                made[b["id"]] = stamp
            elif b.get("type") == "tool_result":
                got[b["tool_use_id"]] = stamp
    return {k: (got[k] - made[k]) * 1000 for k in made if k in got}


def _steps(n: int) -> list[dict[str, Any]]:
    return [*({"tool": "Bash", "input": {"command": f"echo call{i}", "description": "x"}}
              for i in range(n)), {"text": "Done."}]  # fmt: skip


@needs_claude
@pytest.mark.e2e
def test_a_dead_engine_costs_the_call_nothing_is_recorded_and_comes_back(tmp_path: Path) -> None:
    """The engine and its supervisor killed mid-session: the calls after keep Claude Code's own
    output at once and the session goes on; `doctor` says the engine is not running; the next
    session start brings it back, and it records each call it missed (and stores it)."""
    with project(tmp_path) as p:
        assert p.ctxview("install", "claude-code").returncode == 0
        ep = endpoint.load(p.store)
        assert ep is not None
        killed: list[int] = []

        def kill_all() -> None:
            pid = _health(ep)
            assert pid is not None
            supervisor = _ppid(pid)
            for each in (supervisor, pid):  # the supervisor first: nothing starts it again
                os.kill(each, signal.SIGKILL)
                killed.append(each)
            deadline = time.monotonic() + 10
            while _health(ep) is not None:
                assert time.monotonic() < deadline
                time.sleep(0.01)

        with _Killing(_steps(4), at=3, then=kill_all) as api:  # after two calls were hooked
            result = p.claude(api.url, "work")
            got = tool_results(api.main_requests[-1])
        assert result["result"] == "Done." and not result["is_error"] and len(killed) == 2
        calls = sorted(got)
        assert got[calls[0]] == "[#1000]\ncall0" and got[calls[1]] == "[#1001]\ncall1"
        assert got[calls[2]] == "call2" and got[calls[3]] == "call3"  # Claude Code's own
        transcript = next((p.home / ".claude" / "projects").glob(f"*/{result['session_id']}.jsonl"))
        took = _call_ms(transcript)
        assert all(took[c] < 1000 for c in calls[2:]), took  # no wait for a dead engine
        doctor = p.ctxview("doctor")
        assert doctor.returncode == 1 and "hook engine: not running" in doctor.stdout

        # The next session start (a resume) starts it again; it takes in what it missed.
        with FakeAnthropic([{"tool": "Bash", "input": {"command": "echo again",
                                                       "description": "x"}},
                            {"text": "Again."}], prefix="b") as api:  # fmt: skip
            p.claude(api.url, "more", "--resume", result["session_id"])
            again = tool_results(api.main_requests[-1])
        assert again["toolu_b0001_Bash"].startswith("[#100")  # hooked again
        missed = [f for f in failures.read(p.store) if "could not reach the hook engine" in (
            f["error"]) and f["event"] == "PostToolUse"]  # fmt: skip
        assert sorted(f.get("tool_use_id") for f in missed) == calls[2:], missed
        assert all(f["tool_name"] == "Bash" and "ECONNREFUSED" in f["error"] for f in missed)
        doctor = p.ctxview("doctor")
        assert "could not reach the hook engine" in doctor.stdout
        assert "hook engine: running" in doctor.stdout
        import sqlite3

        conn = sqlite3.connect(p.store)
        refs = [r[0] for r in conn.execute(
            "SELECT call_ref FROM events WHERE kind = 'result' ORDER BY seq")]  # fmt: skip
        conn.close()
        assert refs[:4] == calls and len(refs) == len(set(refs)) == 5  # each call once


@needs_claude
@pytest.mark.e2e
def test_an_engine_killed_alone_is_started_again_at_once(tmp_path: Path) -> None:
    """Only the engine killed (its supervisor lives): the supervisor records it and starts it
    again, so the calls after it are hooked again, in the same session, the ids going on."""
    with project(tmp_path) as p:
        assert p.ctxview("install", "claude-code").returncode == 0
        ep = endpoint.load(p.store)
        assert ep is not None
        pids: list[int] = []

        def kill_engine() -> None:
            pid = _health(ep)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            pids.append(pid)
            deadline = time.monotonic() + 30
            while (now := _health(ep)) is None or now == pid:  # back, a new process
                assert time.monotonic() < deadline, failures.read(p.store)
                time.sleep(0.02)
            pids.append(now)

        with _Killing(_steps(4), at=3, then=kill_engine) as api:
            result = p.claude(api.url, "work")
            got = tool_results(api.main_requests[-1])
        assert result["result"] == "Done." and len(pids) == 2 and pids[0] != pids[1]
        calls = sorted(got)
        assert [got[c] for c in calls] == ["[#1000]\ncall0", "[#1001]\ncall1",
                                           "[#1002]\ncall2", "[#1003]\ncall3"]  # fmt: skip
        died = [f for f in failures.read(p.store) if f["event"] == "engine"]
        assert len(died) == 1 and f"(pid {pids[0]}) was ended by signal 9 (SIGKILL)" in (
            died[0]["error"])  # fmt: skip


def test_a_call_answered_by_an_engine_killed_before_storing_it_keeps_its_id(
        tmp_path: Path) -> None:  # fmt: skip
    """Killed after the answer, while the call's events wait for Claude Code's record of the
    call: the next engine stores the call after its record, under the id the model got."""
    import sqlite3

    from claude_helpers import bash_turn

    store = tmp_path / "state" / "store.db"
    transcript = tmp_path / f"{SID}.jsonl"
    prompt, call, result = bash_turn(SID, tmp_path, "list files", "")
    call["message"]["content"][0]["id"] = result["message"]["content"][0]["tool_use_id"] = "t1"
    transcript.write_text(json.dumps(prompt) + "\n")  # the call's record is not written yet
    try:
        ep = _start_engine(store)
        start = {"session_id": SID, "cwd": str(tmp_path), "hook_event_name": "SessionStart",
                 "transcript_path": str(transcript), "source": "startup"}  # fmt: skip
        assert _post(ep, start, {endpoint.HEADER: ep.secret}, "/hook/SessionStart")[0] == 200
        hook = {**_bash(tmp_path, "t1"), "transcript_path": str(transcript)}
        status, body = _post(ep, hook, {endpoint.HEADER: ep.secret})
        shown = json.loads(body)["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
        pid = _health(ep)
        assert status == 200 and shown == "[#1000]\na.py" and pid is not None
        for each in (_ppid(pid), pid):
            os.kill(each, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _health(ep) is not None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        conn = sqlite3.connect(store)
        assert conn.execute("SELECT count(*) FROM events WHERE kind = 'result'").fetchone() == (0,)
        # Claude Code goes on: the call's record, then its result as the model got it.
        result["message"]["content"][0]["content"] = shown
        result["toolUseResult"]["stdout"] = shown
        with transcript.open("a") as f:
            f.write(json.dumps(call) + "\n" + json.dumps(result) + "\n")
        _start_engine(store)  # (the next SessionStart)
        deadline = time.monotonic() + 30
        while not conn.execute("SELECT count(*) FROM events WHERE kind = 'result'").fetchone()[0]:
            assert time.monotonic() < deadline, failures.read(store)
            time.sleep(0.05)
        rows = conn.execute("SELECT kind, role, rid, call_ref FROM events WHERE kind IN "
                            "('message', 'call', 'result') ORDER BY seq").fetchall()  # fmt: skip
        conn.close()
        assert [r[:3] for r in rows[-3:]] == [("message", "assistant", None), ("call", None, None),
                                              ("result", None, 0x1000)], rows  # fmt: skip
        assert sum(r[0] == "result" for r in rows) == 1
    finally:
        stop(store)
