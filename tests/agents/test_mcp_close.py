"""A server closed twice at once ends its sessions once. Codex stops its MCP servers by closing
their stdin and signalling their process group together: the end of stdin and SIGTERM each
closed the connection. The second close waited for the session's lock (a flock, polled) on the
event loop the first needed to finish under it: after 5 s it gave up and closed the writer under
the first, the process exited, and the session was never ended (test_codex_mcp under load)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from engine_helpers import with_heartbeat

from ctxview.agents.mcp.server import Connection


async def _one_read(tmp_path: Path, sid: str) -> tuple[Connection, Path]:
    """A server's connection that has made session `sid` live with one read; and its store."""
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    store = tmp_path / "store.db"
    conn = Connection(store=store, workspace=ws, env={"CTXVIEW_SESSION": sid})
    assert (await conn.call("read", {"path": "a.txt"})).startswith("[#1000 a.txt")
    return conn, store


async def test_two_closes_at_once_end_the_session_once(tmp_path: Path) -> None:
    conn, store = await _one_read(tmp_path, "s-close")
    assert conn.made_live == {"s-close"}
    started = asyncio.get_running_loop().time()
    await asyncio.wait_for(asyncio.gather(conn.close(), conn.close()), timeout=30)
    took = asyncio.get_running_loop().time() - started
    assert took < 2, f"the closes took {took:.1f} s"
    with sqlite3.connect(store) as db:
        ended = db.execute("SELECT ended FROM sessions WHERE id = 's-close'").fetchone()[0]
        ends = db.execute(
            "SELECT count(*) FROM events WHERE session = 's-close' AND kind = 'end'"
        ).fetchone()[0]
    assert ended is not None and ends == 1
    await conn.close()  # a third, later: nothing left to do


async def test_a_call_waiting_for_another_writers_lock_leaves_the_loop_free(tmp_path: Path) -> None:
    """The session's flock, held by another process (a hook), is waited for without stopping
    the event loop: the server's other sessions and its closing go on meanwhile. The wait used
    `time.sleep` on the loop."""
    import subprocess
    import sys

    from ctxview.agents.live import lock_path

    conn, store = await _one_read(tmp_path, "s-wait")
    lock = lock_path(store, "s-wait")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(0.8)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        # Waits for the holder's 0.8 s.
        text, beats, gap = await with_heartbeat(conn.call("read", {"path": "a.txt"}))
        assert text.startswith("[#1001 a.txt") and "Unchanged since #1000" in text
        assert beats > 20, beats
        assert gap < 0.3, f"the loop stopped for {gap:.2f} s"
    finally:
        holder.wait(timeout=30)
        await conn.close()
