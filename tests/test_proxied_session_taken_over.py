"""A session the proxy alone has seen is a placeholder (the row the viewer lists, its requests):
the engine that opens it first (Codex's MCP server, the hooks, an import) takes it over, its
own fields over the proxy's, the proxy's data kept. The proxy's recording runs in a process of
its own, so its row may land at any moment before or while an engine makes the session: a
`cx-` session's first MCP call then failed with "UNIQUE constraint failed: sessions.id"."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxview.engine.session import Session
from ctxview.store import Writer, proxy_records

CTXVIEW = [sys.executable, "-m", "ctxview.cli"]


async def _proxy_row(store: Path, sid: str) -> None:
    """What the proxy's recorder writes for a session it is first to see."""
    async with await Writer.open(store):
        pass
    conn = sqlite3.connect(store)
    try:
        with conn:
            conn.execute(proxy_records.NEW_SESSION,
                         (sid, "work", "/work", 1000.0, json.dumps({"proxied": True})))  # fmt: skip
    finally:
        conn.close()


def _row(store: Path, sid: str) -> tuple[str, str, float, dict[str, object]]:
    conn = sqlite3.connect(store)
    try:
        source, title, started, data = conn.execute(
            "SELECT source, title, started, data FROM sessions WHERE id = ?", (sid,)
        ).fetchone()
    finally:
        conn.close()
    return source, title, started, json.loads(data)


async def test_an_engine_takes_over_the_proxys_row(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await _proxy_row(store, "cx-t-1")
    async with await Writer.open(store) as w:
        assert await w.session_info("cx-t-1") is None  # no engine's session yet
        s = await Session.start(w, tmp_path, title="mine", source="codex", session_id="cx-t-1",
                                data=json.dumps({"hooked": True}))  # fmt: skip
        await s.run("list", {})
        info = await w.session_info("cx-t-1")
        assert info is not None and info["source"] == "codex"
        # An engine's own session is not taken over twice.
        with pytest.raises(sqlite3.IntegrityError):
            await Session.start(w, tmp_path, source="codex", session_id="cx-t-1")
    source, title, started, data = _row(store, "cx-t-1")
    assert (source, title, started) == ("codex", "mine", 1000.0)  # started: the first request
    assert data == {"proxied": True, "hooked": True}


async def test_codexs_first_mcp_call_after_the_proxy_recorded_its_request(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "hello.txt").write_text("alpha\n")
    store = tmp_path / "store.db"
    await _proxy_row(store, "cx-t-1")
    meta = {
        "sessionId": "t-1",
        "threadId": "t-1",
        "x-codex-turn-metadata": {"turn_id": "u"},
        "callId": "call_1",
    }
    params = StdioServerParameters(command=CTXVIEW[0],
                                   args=[*CTXVIEW[1:], "--store", str(store), "mcp", "--tools",
                                         "all"], cwd=str(ws), env={})  # fmt: skip
    async with Client(params) as client:
        got = await client.call_tool("read", {"path": "hello.txt"}, meta=meta)
    text = "".join(getattr(c, "text", "") for c in got.content)
    assert "alpha" in text and "Error" not in text
    source, _, _, data = _row(store, "cx-t-1")
    assert source == "codex" and data["hooked"] is True and data["proxied"] is True
