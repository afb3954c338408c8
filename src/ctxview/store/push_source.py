"""The store read for a push (sync/push.py): a read-only sqlite3 connection that sync's worker
threads share, sessions by filter, and slices of a session's events and bodies past a
watermark, each read in one snapshot. The only thing written is the machine's name."""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ctxview.store import schema
from ctxview.store.records import EVENT_COLUMNS
from ctxview.store.schema import StoreError

# The sessions' columns a push sends and a pull writes (the team's table has the same).
SESSION_FIELDS = ("title", "workspace", "source", "source_path", "source_ref", "parent_session",
                  "parent_call", "started", "ended", "config", "next_rid", "data",
                  "lease_until")  # fmt: skip


def machine_name(path: Path) -> str:
    """This device's name, chosen once and kept in the store's meta: $CTXVIEW_MACHINE or the
    host name the first time, the stored one after."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        schema.check(conn)
        row = conn.execute("SELECT value FROM meta WHERE key = 'machine'").fetchone()
        if row:
            return str(row[0])
        name = os.environ.get("CTXVIEW_MACHINE") or socket.gethostname() or "machine"
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('machine', ?)", (name,))
        return str(conn.execute("SELECT value FROM meta WHERE key = 'machine'").fetchone()[0])
    finally:
        conn.close()


class PushSource:
    """The local store, read-only, for one push. Its calls run on sync's worker threads, one
    at a time (check_same_thread off)."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise StoreError(f"There is no store at {path}; nothing to push.")
        uri = "file:" + quote(str(path.absolute())) + "?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 10000")
        schema.check(self._conn)

    def close(self) -> None:
        self._conn.close()

    def sessions(self, only: list[str] | None, since: float | None) -> list[tuple[Any, ...]]:
        """(id, *SESSION_FIELDS) of the sessions chosen (by id, started since), oldest first."""
        where: list[str] = []
        params: list[Any] = []
        if only:
            where.append(f"id IN ({', '.join('?' * len(only))})")
            params += only
        if since is not None:
            where.append("started >= ?")
            params.append(since)
        sql = f"SELECT id, {', '.join(SESSION_FIELDS)} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return self._conn.execute(sql + " ORDER BY started", params).fetchall()

    def slice(
        self, sid: str, seq: int, body: int, rows: int, body_bytes: int
    ) -> tuple[list[Any], list[Any], bool]:
        """The next events (seq, *EVENT_COLUMNS) past `seq` and bodies (rowid, rid, shown,
        stored) past rowid `body`, read in one snapshot: up to `rows` of each and about
        `body_bytes` of bodies; and whether there is more."""
        c = self._conn
        c.execute("BEGIN")
        try:
            events = c.execute(
                f"SELECT seq, {', '.join(EVENT_COLUMNS)} FROM events WHERE session = ? "
                "AND seq > ? ORDER BY seq LIMIT ?", (sid, seq, rows),
            ).fetchall()  # fmt: skip
            bodies: list[Any] = []
            size = 0
            for r in c.execute(
                "SELECT rowid, rid, shown, CAST(stored AS TEXT) FROM bodies "
                "WHERE session = ? AND rowid > ? ORDER BY rowid", (sid, body),
            ):  # fmt: skip
                bodies.append(r)
                size += len(r[2]) + len(r[3])
                if size >= body_bytes or len(bodies) >= rows:
                    break
            more = len(events) >= rows or size >= body_bytes or len(bodies) >= rows
        finally:
            c.execute("COMMIT")
        return events, bodies, more

    def same_event(self, sid: str, seq: int, ts: float | None) -> bool:
        """Whether the session's event `seq` is there with time `ts` (the one pushed)."""
        row = self._conn.execute(
            "SELECT ts FROM events WHERE session = ? AND seq = ?", (sid, seq)
        ).fetchone()
        return row is not None and row[0] == ts

    def data_version(self) -> int:
        """Changes whenever another connection commits."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
