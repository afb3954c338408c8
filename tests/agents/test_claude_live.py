"""The viewer in tmux follows a hooked Claude Code run: the session is live while Claude Code
runs, and each result shows as it arrives (the scripted model waits for the test between
steps), the model's recall among them."""

from __future__ import annotations

import shlex
import shutil
import sqlite3
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from claude_helpers import CLAUDE, CTXVIEW, needs_claude, project
from fake_anthropic import FakeAnthropic

pytestmark = [
    needs_claude,
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def _wait(check, timeout: float, what: str):  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen in {timeout} s")


def test_the_viewer_follows_a_hooked_claude_code_run(tmp_path: Path) -> None:
    sock = f"ctxview-cc-{uuid.uuid4().hex[:8]}"

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True,
                              timeout=30).stdout  # fmt: skip

    with project(tmp_path) as p:
        (p.root / "app.py").write_text("".join(f"x{i} = {i}\n" for i in range(30)))
        assert p.ctxview("install", "claude-code").returncode == 0
        steps = [
            {"tool": "Read", "input": {"file_path": str(p.root / "app.py")}},
            {"tool": "Bash", "input": {"command": "seq 1 500", "description": "count"}},
            {"tool": "mcp__ctxview__recall", "input": {"id": "#1001", "limit": 3}},
            {"text": "Finished."},
        ]
        gate = threading.Semaphore(0)
        with FakeAnthropic(steps, gate=gate) as api:
            claude = subprocess.Popen(
                [str(CLAUDE), "-p", "go", "--output-format", "json", "--allowedTools",
                 "Read,Bash,mcp__ctxview__recall"], cwd=p.root, env=p.env(api.url),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            try:
                # SessionStart made the session before the first request: open the viewer on it.
                sid = _wait(lambda: _session(p.store), 60, "the hooked session in the store")
                tmux("-f", "/dev/null", "new-session", "-d", "-s", "v", "-x", "130", "-y", "45",
                     f"env TERM=xterm-256color {shlex.join([str(CTXVIEW), '--store', str(p.store), 'view', '--session', sid])}")  # fmt: skip
                screen = lambda: tmux("capture-pane", "-p", "-t", "v")  # noqa: E731
                _wait(lambda: "live" in screen(), 30, "the live session")
                for rid, seen in (("#1000", "app.py"), ("#1001", "seq 1 500"),
                                  ("#1002", "recall #1001")):  # fmt: skip
                    assert rid not in screen()
                    gate.release()  # the model makes its next call
                    try:
                        _wait(lambda r=rid, s=seen: r in screen() and s in screen(), 30,
                              f"{rid} on screen")  # fmt: skip
                    except AssertionError as exc:
                        raise AssertionError(f"{exc}; the screen:\n{screen()}") from None
                    assert claude.poll() is None  # arrived while Claude Code still runs
                gate.release()
                _, err = claude.communicate(timeout=120)
                assert claude.returncode == 0, err[-2000:]
                _wait(lambda: "ended" in screen(), 30, "the session shown as ended")
            finally:
                if claude.poll() is None:
                    claude.kill()
                tmux("kill-server")


def _session(store: Path) -> str | None:
    if not store.exists():
        return None
    conn = sqlite3.connect(store)
    try:
        row = conn.execute("SELECT id FROM sessions WHERE source = 'claude-code'").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return row[0] if row else None
