"""A store that cannot be opened for writing (its folder immutable, with or without the store in
it; its path under a regular file): every hook fails at once, prints nothing, and is recorded
where a record can be written (the user's private socket folder); `ctxview doctor` names the
store and why, and exits 1. Once the store can be written again, the hooks work again. Through
each way Claude Code reaches the real engine process: the http hook it POSTs for every tool call
(the engine answers `{}`), and the command hook (SessionStart, and every event of an older
install), which also starts the engine."""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from suite_home import leave_no_trace

from ctxview.agents import endpoint, failures
from ctxview.agents.hook_client import stop

CLIENT = Path(__file__).resolve().parents[2] / "src" / "ctxview" / "agents" / "hook_client.py"
AT_ONCE = 0.050  # seconds a failing hook may take (the median of several, after the first)


def _payload(cwd: Path, ref: str) -> dict[str, object]:
    return {"session_id": "s1", "cwd": str(cwd), "transcript_path": str(cwd / "none.jsonl"),
            "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": ref,
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a", "stderr": "", "interrupted": False}}  # fmt: skip


def _command(store: Path, cwd: Path, ref: str, event: str = "post-tool-use"
             ) -> tuple[bytes, float]:  # fmt: skip
    """The command hook as `ctxview install claude-code` writes it (python -S on the file)."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-S", str(CLIENT), event, "--store", str(store)],
                          input=json.dumps(_payload(cwd, ref)).encode(), capture_output=True,
                          timeout=30)  # fmt: skip
    took = time.monotonic() - start
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout, took


def _bare_start() -> float:
    """How long `python -S` takes to start and end doing nothing, now."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-S", "-c", ""], capture_output=True, timeout=30, check=True)
    return time.monotonic() - start


def _http(store: Path, cwd: Path, ref: str) -> tuple[bytes, float]:
    """The http hook as Claude Code sends it (a POST with the store's secret), timed from the
    connection to the answer read; its answer as Claude Code reads it (`{}`: nothing to add)."""
    ep = endpoint.load(store)
    assert ep is not None
    start = time.monotonic()
    conn = http.client.HTTPConnection(endpoint.LOOPBACK, ep.port, timeout=30)
    try:
        conn.request("POST", "/hook/PostToolUse", body=json.dumps(_payload(cwd, ref)),
                     headers={"Content-Type": "application/json",
                              endpoint.HEADER: ep.secret})  # fmt: skip
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    took = time.monotonic() - start
    assert resp.status == 200
    return (b"" if body == b"{}" else body), took


def _doctor(store: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxview.cli", "--store", str(store),
                           "doctor"], capture_output=True, text=True, timeout=60, cwd=home,
                          env={**os.environ, "HOME": str(home)})  # fmt: skip


def _lock(folder: Path, undo: list[Path]) -> None:
    """The folder unwritable for this process: immutable for root (who may write anything
    else), mode 0555 otherwise."""
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not possible here: {done.stderr.strip()}")
    else:
        folder.chmod(0o555)
    undo.append(folder)


@pytest.fixture
def undo() -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for folder in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=False)
        else:
            folder.chmod(0o700)


# No http case for a store under a file: nothing can be written beside it, so install makes no
# endpoint there (and an engine finds none to listen on: Claude Code's http hook is refused at
# once and keeps its own output).
@pytest.mark.parametrize(("case", "transport"), [
    ("immutable-empty", "http"), ("immutable-with-store", "http"),
    ("immutable-empty", "command"), ("immutable-with-store", "command"),
    ("under-a-file", "command")])  # fmt: skip
def test_an_unwritable_store_fails_each_hook_at_once_and_says_so(
    tmp_path: Path, undo: list[Path], case: str, transport: str
) -> None:
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    folder = tmp_path / "state"
    folder.mkdir()
    store = folder / "store.db"
    if case == "under-a-file":
        (tmp_path / "file").write_text("not a folder\n")
        store = tmp_path / "file" / "store.db"
    # Its fallback log is outside the test's folder: none left by an earlier run at this path.
    failures.clear(store)
    if case != "under-a-file":
        endpoint.ensure(store)  # as install makes it, beside the store
        if case == "immutable-with-store":
            out, _ = _command(store, cwd, "w0")  # a store made, its engine stopped (WAL in)
            assert b"[#1000]" in out
            assert stop(store)
    hook = _http if transport == "http" else _command
    try:
        if case != "under-a-file":
            _lock(folder, undo)
        took: list[float] = []
        if transport == "http":  # SessionStart's command starts the engine (and fails too)
            out, first = _command(store, cwd, "start", "session-start")
            assert out == b""
        for i in range(8):
            out, secs = hook(store, cwd, f"x{i}")
            assert out == b""  # Claude Code keeps its own output
            # A command hook's time less a bare interpreter's start beside it: what ctxview
            # takes, not what the loaded machine takes to start a process.
            took.append(secs - _bare_start() if transport == "command" else secs)
        if transport == "command":
            first, took = took[0], took[1:]  # the first starts the engine
        median = statistics.median(took)
        print(f"{case}, {transport}: first {first * 1000:.0f} ms, then median "
              f"{median * 1000:.1f} ms, max {max(took) * 1000:.1f} ms; load "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip
        assert median <= AT_ONCE and max(took) < 0.5, took
        recorded = [f for f in failures.read(store) if f.get("tool_use_id", "").startswith("x")]
        assert len(recorded) == 8
        assert all(str(store) in f["error"] for f in recorded), recorded[-1]
        doctor = _doctor(store, home)
        assert doctor.returncode == 1
        assert f"store: {store}\n  cannot be opened for writing: " in doctor.stdout
        # The engine's own failure to open the store, and each hook's (SessionStart's too).
        n = 9 + (transport == "http")
        assert f"hook failures: {n} recorded" in doctor.stdout, doctor.stdout
    finally:
        for folder_ in undo:
            if os.geteuid() == 0:
                subprocess.run(["chattr", "-i", str(folder_)], check=False)
            else:
                folder_.chmod(0o700)
        undo.clear()
        if case == "under-a-file":  # no store to find after the test: its traces cleared here
            leave_no_trace(store)
    if case != "under-a-file":  # writable again: the engine opens it on a later hook
        deadline = time.monotonic() + 30
        while True:
            out, _ = hook(store, cwd, "again")
            if out or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert b"[#10" in out
    stop(store)
