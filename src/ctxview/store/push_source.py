"""The store read for a push (sync/push.py): a read-only sqlite3 connection that sync's worker
threads share, sessions by filter, and slices of a session's events and bodies past a
watermark, and of its request records past their `rev` (schema 7), each read in one snapshot.
The only thing written is the machine's name."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ctxview.store import schema
from ctxview.store.proxy_records import ProxyRow
from ctxview.store.records import EVENT_COLUMNS
from ctxview.store.schema import StoreError

# The sessions' columns a push sends and a pull writes (the team's table has the same).
SESSION_FIELDS = ("title", "workspace", "source", "source_path", "source_ref", "parent_session",
                  "parent_call", "started", "ended", "config", "next_rid", "data",
                  "lease_until")  # fmt: skip

# A session's request records, each table's columns as a push sends them and a pull writes
# them (after the session's id; the rev is the store's own). The shapes and messages they name
# (`api_shapes`, `api_blobs`) are shared by hash and go with them.
SIDE_COLUMNS: dict[str, tuple[str, ...]] = {
    "api_requests": ("n", "id", "ts", "query_source", "shape_hash", "base", "keep", "tail",
                     "params", "cache_control", "digest", "usage"),
    "api_costs": ("cost",),
    "proxy_records": tuple(f.name for f in fields(ProxyRow) if f.name != "session"),
}  # fmt: skip
SIDE_KEYS: dict[str, tuple[str, ...]] = {
    t: tuple(k for k in key if k != "session") for t, key in schema.REV_TABLES.items()
}
_BIG_SIDE = ("body_raw", "answer", "answer_raw", "layout", "tail")  # what weighs in a record


def hashes_named(requests: list[tuple[Any, ...]]) -> set[str]:
    """The shapes and messages that `api_requests` rows (rev, *SIDE_COLUMNS) name."""
    cols = SIDE_COLUMNS["api_requests"]
    shape_at, tail_at = 1 + cols.index("shape_hash"), 1 + cols.index("tail")
    out: set[str] = set()
    for r in requests:
        if r[shape_at]:
            out.add(str(r[shape_at]))
        out.update(str(h) for h in json.loads(r[tail_at] or "[]"))
    return out


def machine_name(path: Path) -> str:
    """This device's name, chosen once and kept in the store's meta: $CTXVIEW_MACHINE or the
    host name the first time, the stored one after. An older store is migrated first (the push
    reads it read-only after this, and reads the columns of the newest schema)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        if schema.check(conn) is not None:
            schema.ensure(conn)
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

    def side_revs(self, sid: str) -> dict[str, int]:
        """The newest rev of the session's rows in each request-record table (0: none)."""
        parts = ", ".join(f"(SELECT coalesce(max(rev), 0) FROM {t} WHERE session = ?1)"
                          for t in SIDE_COLUMNS)  # fmt: skip
        got = self._conn.execute(f"SELECT {parts}", (sid,)).fetchone()
        return dict(zip(SIDE_COLUMNS, map(int, got), strict=True))

    def side_slice(
        self, sid: str, marks: dict[str, int], rows: int, body_bytes: int
    ) -> tuple[dict[str, list[Any]], dict[str, list[tuple[str, str]]], bool]:
        """The session's request-record rows (rev, *SIDE_COLUMNS) past each table's rev in
        `marks`, in rev order, up to `rows` of each and about `body_bytes` in all; the shapes
        and messages (hash, JSON) the requests name, by table; and whether there is more. One
        snapshot, so a record never comes without the request rows it was written with."""
        c = self._conn
        out: dict[str, list[Any]] = {}
        more = False
        size = 0
        c.execute("BEGIN")
        try:
            for table, cols in SIDE_COLUMNS.items():
                big = [1 + i for i, col in enumerate(cols) if col in _BIG_SIDE]
                got: list[Any] = []
                for r in c.execute(
                    f"SELECT rev, {', '.join(cols)} FROM {table} WHERE session = ? AND rev > ? "
                    "ORDER BY rev", (sid, marks.get(table, 0)),
                ):  # fmt: skip
                    if len(got) >= rows or (got and size >= body_bytes):
                        more = True
                        break
                    got.append(r)
                    size += sum(len(r[i]) for i in big if r[i] is not None)
                out[table] = got
            named = sorted(hashes_named(out["api_requests"]))
            shared = {"api_shapes": self._by_hash(named, "api_shapes", "shape"),
                      "api_blobs": self._by_hash(named, "api_blobs", "message")}  # fmt: skip
        finally:
            c.execute("COMMIT")
        return out, shared, more

    def _by_hash(self, hashes: list[str], table: str, column: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for i in range(0, len(hashes), 500):
            part = hashes[i : i + 500]
            found += self._conn.execute(
                f"SELECT hash, {column} FROM {table} WHERE hash IN ({', '.join('?' * len(part))})",
                part,
            ).fetchall()
        return found

    def same_event(self, sid: str, seq: int, ts: float | None) -> bool:
        """Whether the session's event `seq` is there with time `ts` (the one pushed)."""
        row = self._conn.execute(
            "SELECT ts FROM events WHERE session = ? AND seq = ?", (sid, seq)
        ).fetchone()
        return row is not None and row[0] == ts

    def data_version(self) -> int:
        """Changes whenever another connection commits."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
