"""The store's search: an older store's calls are indexed when it is migrated (schema 3); a
store without that index still finds results; hits across sessions, and the limit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from test_store_schema import make_v1_store

from ctxview.engine.session import Session
from ctxview.store import Reader, Writer


async def test_an_older_stores_calls_are_found_after_migration(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    make_v1_store(store, tmp_path)
    async with await Writer.open(store):
        pass  # migrates: the call stored before schema 3 is indexed, once
    async with await Reader.open(store) as reader:
        hits, _ = await reader.search_hits("command")
        assert [(h.session, h.seq, h.kind, h.tool) for h in hits] == [("old", 1, "call", "bash")]
        hits, more = await reader.search_hits("aardvark")
        assert [(h.session, h.kind, h.rid) for h in hits] == [("old", "result", 4096)]
        assert not more
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM events_fts").fetchone() == (1,)
        # A store without the events' index (read as it is, never migrated): results only.
        conn.execute("DROP TRIGGER events_fts_insert")
        conn.execute("DROP TABLE events_fts")
    async with await Reader.open(store) as reader:
        assert await reader.search_hits("command") == ([], False)
        hits, _ = await reader.search_hits("aardvark")
        assert [h.kind for h in hits] == ["result"]


async def test_hits_across_sessions_newest_first_and_the_limit(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = tmp_path / "store.db"
    async with await Writer.open(store) as writer:
        for n, sid in enumerate(("older", "newer")):
            s = await Session.start(writer, ws, session_id=sid, started=1_700_000_000.0 + n)
            await s.message("user", f"find the walrus in {sid}")
            await s.message("assistant", "looking", data={"thinking": "a walrus, surely"})
            await s.insert("bash", {"command": "grep walrus"}, "walrus.txt")
            await s.compact("Summary: the walrus was found.")
    async with await Reader.open(store) as reader:
        hits, more = await reader.search_hits("walrus")
        assert not more and len(hits) == 10
        assert [h.session for h in hits] == ["newer"] * 5 + ["older"] * 5
        assert [h.kind for h in hits[:5]] == ["message", "message", "call", "result", "compaction"]
        assert "thinking" not in hits[1].snippet and "walrus" in hits[1].snippet
        one, more = await reader.search_hits("walrus", session="older", limit=3)
        assert len(one) == 3 and more and {h.session for h in one} == {"older"}
        assert [h.seq for h in one] == sorted(h.seq for h in one)
