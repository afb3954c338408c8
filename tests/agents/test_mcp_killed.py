"""A real `ctxview mcp` process killed by its host: the session it made live ends all the same,
promptly. Codex 0.169.0 stops its servers by closing their stdin and signalling their process
group, SIGTERM then SIGKILL, and kills them outright when it exits itself: on a loaded machine
the server's own closing had not run, and the session stayed live for good (test_codex_mcp
failed under load: "the session is still live after Codex exited")."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from mcp_stdio import RawMcp


def _ended(store: Path) -> list[tuple[str, float | None, int]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(
            "SELECT id, ended, (SELECT count(*) FROM events e WHERE e.session = s.id AND "
            "e.kind = 'end') FROM sessions s"
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("signals", [("SIGKILL",), ("SIGTERM", "SIGKILL"), ("SIGTERM",)])
def test_a_killed_server_still_ends_its_session(tmp_path: Path, signals: tuple[str, ...]) -> None:
    """Each signal to the server's whole process group, as Codex sends them (the second one at
    once: the server's closing is cut short). The session ends once, within seconds."""
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "hello.txt").write_text("alpha\nbeta\n")
    store = tmp_path / "store.db"
    mcp = RawMcp(store, ws, stderr=subprocess.DEVNULL, own_group=True)
    proc = mcp.proc
    try:
        mcp.initialize("codex-test")
        answer = mcp.call("read", {"path": "hello.txt"},
                          _meta={"sessionId": "t-kill", "callId": "call_1"})  # fmt: skip
        assert answer["result"]["content"][0]["text"].startswith("[#1000 hello.txt lines 1-2")
        assert _ended(store) == [("cx-t-kill", None, 0)]
        for name in signals:
            os.killpg(proc.pid, getattr(signal, name))
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    deadline = time.monotonic() + 30  # a bound for a loaded machine; it returns once ended
    while _ended(store)[0][1] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    ((sid, ended, ends),) = _ended(store)
    assert sid == "cx-t-kill"
    assert ended is not None, f"the session is still live after {'+'.join(signals)}"
    assert ends == 1
