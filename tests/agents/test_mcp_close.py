"""A server closed twice at once ends its sessions once. Codex stops its MCP servers by closing
their stdin and signalling their process group together: the end of stdin and SIGTERM each
closed the connection. The second close waited for the session's lock (a flock, polled) on the
event loop the first needed to finish under it: after 5 s it gave up and closed the writer under
the first, the process exited, and the session was never ended (test_codex_mcp under load)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from ctxview.backend.agents.mcp_server import Connection


async def test_two_closes_at_once_end_the_session_once(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    store = tmp_path / "store.db"
    conn = Connection(store=store, workspace=ws, env={"CTXVIEW_SESSION": "s-close"})
    assert (await conn.call("read", {"path": "a.txt"})).startswith("[#1000 a.txt")
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
