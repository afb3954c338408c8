"""Ids reserved before an answer: the hook engine answers a tool call before its events are
stored, so the id the model is given is made durable first, in the session's `next_rid` (the
tree's counter is the largest of its members': `store.tree`)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path


class IdReserver:
    """A connection of its own that never waits on the store's lock (the event loop must not
    stop while the writer's import holds it), committing as the writer does (WAL, no sync at
    each commit)."""

    def __init__(self, store: Path | str) -> None:
        self._conn = sqlite3.connect(store, timeout=0, isolation_level=None)
        self._conn.execute("PRAGMA synchronous = NORMAL")

    async def reserve(self, session_id: str, upto: int, budget: float) -> None:
        """The session's ids below `upto` taken, committed at once; while another connection
        holds the lock (an import's few milliseconds), tried again as soon as it lets go, for
        at most `budget` seconds (then SQLite's "locked" error)."""
        deadline = time.monotonic() + budget
        while True:
            try:
                self._conn.execute("UPDATE sessions SET next_rid = max(next_rid, ?) WHERE id = ?",
                                   (upto, session_id))  # fmt: skip
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.001)

    def close(self) -> None:
        self._conn.close()
