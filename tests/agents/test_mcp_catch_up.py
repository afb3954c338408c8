"""The MCP server's session stays in memory between calls and takes in what other writers (a
hook, an import) stored meanwhile, as `Session.resume` would have built it: their ids, their
reads for the unchanged stub, their searches for the same-result stub, the files they saw
change, and their compactions. In process, on a real store; the server's `Connection` is the
object `ctxview mcp` runs every call through."""

from __future__ import annotations

import json
from pathlib import Path

from ctxview.agents import live
from ctxview.agents.mcp.server import Connection
from ctxview.engine.session import Session
from ctxview.store import Writer


async def _as_hook(store: Path, sid: str, tool: str, args: dict[str, object]) -> str:
    """Another process's write, the way the hooks make it: under the lock, resumed in full."""
    async with live.session_lock(store, sid), await Writer.open(store) as w:
        session = await Session.resume(w, sid)
        if tool == "compact":
            return await session.compact("summary")
        return await session.run(tool, args)


async def test_the_server_catches_up_with_another_writer(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "b.txt").write_text("three\n")
    store = tmp_path / "store.db"
    sid = "cc-abc"
    async with await Writer.open(store) as w:
        await Session.start(w, ws, session_id=sid, source=live.CLAUDE,
                            data=json.dumps({"hooked": True}))  # fmt: skip
    conn = Connection(store=store, workspace=ws, env={"CLAUDE_CODE_SESSION_ID": "abc"})
    try:
        assert (await conn.call("read", {"path": "a.txt"})).startswith("[#1000 a.txt lines 1-2")
        # The hook reads b.txt and greps: the server's next answers build on them.
        assert (await _as_hook(store, sid, "read", {"path": "b.txt"})).startswith("[#1001 b.txt")
        assert (await _as_hook(store, sid, "grep", {"pattern": "t"})).startswith("[#1002]\n")
        stub = await conn.call("read", {"path": "b.txt"})
        assert stub.startswith("[#1003 b.txt lines 1-1 of 1 sha ")
        assert stub.endswith("] Unchanged since #1001, which already shows lines 1-1.")
        assert await conn.call("grep", {"pattern": "t"}) == "[#1004] Same result as #1002."
        # The hook's edit: the server's next edit of that file has no "changed outside" note.
        assert "-three\n+THREE" in await _as_hook(
            store, sid, "edit", {"path": "b.txt", "old_string": "three", "new_string": "THREE"}
        )
        again = await conn.call("edit", {"path": "b.txt", "old_string": "THREE", "new_string": "3"})
        assert again.startswith("[#1006 b.txt") and "outside" not in again
        # A compaction by the hook empties the server's dedupe table too: a re-read is in full.
        await _as_hook(store, sid, "compact", {})
        full = await conn.call("read", {"path": "a.txt"})
        assert full.startswith("[#1007 a.txt lines 1-2 of 2 sha ") and full.endswith("2: two")
    finally:
        await conn.close()
    async with await Writer.open(store) as w:
        state = await w.session_state(sid)
    assert [ev.rid for ev in state["events"] if ev.kind == "result"] == list(range(0x1000, 0x1008))
