"""The local store a pull writes into (sync/pull.py), a replica the viewer reads as any store:
pulled sessions, their events and bodies (indexed for search), their request records (the
import's and the proxy's, with the shapes and messages they name), and each session's pull
watermark in the meta table, a slice and its watermark committed in one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctxview.store import schema
from ctxview.store.fresh import make_if_missing
from ctxview.store.push_source import SESSION_FIELDS, SIDE_COLUMNS
from ctxview.store.records import EVENT_COLUMNS

FTS_MAX = 1_000_000  # characters of a body the search index takes


def _mark_key(machine: str, sid: str) -> str:
    return f"pull:{machine}\t{sid}"


class Replica:
    """One read-write connection; its calls run on sync's worker threads, one at a time."""

    def __init__(self, path: Path) -> None:
        make_if_missing(path)
        conn = sqlite3.connect(path, isolation_level=None, timeout=10, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 10000")
        schema.check(conn)
        conn.executescript(schema.PRAGMAS)
        schema.ensure(conn)
        self._conn = conn

    def close(self) -> None:
        self._conn.close()

    def missing(self, hashes: set[str]) -> tuple[set[str], set[str]]:
        """Of these hashes, the shapes and the messages not stored here yet."""
        have: dict[str, set[str]] = {"api_shapes": set(), "api_blobs": set()}
        todo = sorted(hashes)
        for table, found in have.items():
            for i in range(0, len(todo), 500):
                part = todo[i : i + 500]
                found.update(r[0] for r in self._conn.execute(
                    f"SELECT hash FROM {table} WHERE hash IN ({', '.join('?' * len(part))})",
                    part))  # fmt: skip
        return hashes - have["api_shapes"], hashes - have["api_blobs"]

    def write_side(
        self,
        machine: str,
        sid: str,
        local_id: str,
        fields: tuple[Any, ...],
        rows: dict[str, list[Any]],
        shared: dict[str, list[tuple[str, str]]],
        mark: dict[str, Any],
    ) -> None:
        """One transaction: the session row, its request-record rows (*SIDE_COLUMNS each, under
        `local_id`; a newer version of a row replaces the one here, as a pulled event does), the
        shapes and messages they name (hash, JSON) not here yet, and the pull's watermark."""
        c = self._conn
        with _pulled(c, local_id, fields, _mark_key(machine, sid), mark):
            c.executemany("INSERT OR IGNORE INTO api_shapes (hash, shape) VALUES (?, ?)",
                          shared.get("api_shapes", []))  # fmt: skip
            c.executemany("INSERT OR IGNORE INTO api_blobs (hash, message) VALUES (?, ?)",
                          shared.get("api_blobs", []))  # fmt: skip
            for table, cols in SIDE_COLUMNS.items():
                c.executemany(
                    f"INSERT OR REPLACE INTO {table} (session, {', '.join(cols)}) "
                    f"VALUES ({', '.join('?' * (len(cols) + 1))})",
                    [(local_id, *r) for r in rows.get(table, [])],
                )

    def mark(self, machine: str, sid: str) -> dict[str, Any] | None:
        """The watermark the last pull of `machine`'s session `sid` committed, or None."""
        row = self._conn.execute(
            "SELECT value FROM meta WHERE key = ?", (_mark_key(machine, sid),)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def session_data(self, sid: str) -> str | None:
        """The `data` JSON of the session with this id here, or None when there is none."""
        row = self._conn.execute("SELECT data FROM sessions WHERE id = ?", (sid,)).fetchone()
        return None if row is None else str(row[0] or "{}")

    def write_slice(
        self,
        machine: str,
        sid: str,
        local_id: str,
        fields: tuple[Any, ...],
        events: list[Any],
        bodies: list[tuple[int, str, str]],
        mark: dict[str, Any],
        *,
        replace: bool,
    ) -> None:
        """One transaction: the session row (`fields`: SESSION_FIELDS) as `local_id`, its
        events (seq, *EVENT_COLUMNS; all of them replaced when `replace`), the bodies (rid,
        shown, stored) not there yet with their search index, and the pull's new watermark."""
        c = self._conn
        with _pulled(c, local_id, fields, _mark_key(machine, sid), mark):
            if replace:
                c.execute("DELETE FROM events WHERE session = ?", (local_id,))
            marks = ", ".join("?" for _ in range(len(EVENT_COLUMNS) + 2))
            c.executemany(
                f"INSERT OR REPLACE INTO events (session, seq, {', '.join(EVENT_COLUMNS)}) "
                f"VALUES ({marks})", [(local_id, *e) for e in events],
            )  # fmt: skip
            for rid, shown, stored in bodies:
                cur = c.execute(
                    "INSERT OR IGNORE INTO bodies (session, rid, shown, stored) VALUES (?,?,?,?)",
                    (local_id, rid, shown, stored),
                )
                if cur.rowcount:
                    c.execute("INSERT INTO bodies_fts (rowid, stored) VALUES (?, ?)",
                              (cur.lastrowid, stored[:FTS_MAX]))  # fmt: skip


@contextmanager
def _pulled(
    c: sqlite3.Connection, local_id: str, fields: tuple[Any, ...], key: str, mark: dict[str, Any]
) -> Iterator[None]:
    """One transaction around what the block writes: the session row first, the pull's
    watermark (`mark` under `key`) last, so a slice and its watermark land together or not at
    all (a failure anywhere rolls both back and is raised)."""
    c.execute("BEGIN IMMEDIATE")
    try:
        _session(c, local_id, fields)
        yield
        c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                  (key, json.dumps(mark)))  # fmt: skip
        c.execute("COMMIT")
    except BaseException:
        if c.in_transaction:
            c.execute("ROLLBACK")
        raise


def _session(c: sqlite3.Connection, local_id: str, fields: tuple[Any, ...]) -> None:
    """The pulled session's row (`fields`: SESSION_FIELDS) as `local_id`, made or updated; its
    id counter never goes back."""
    cols = ", ".join(SESSION_FIELDS)
    c.execute(
        f"INSERT INTO sessions (id, {cols}) VALUES (?, {', '.join('?' * len(fields))}) "
        "ON CONFLICT (id) DO UPDATE SET "
        + ", ".join(f"{k} = excluded.{k}" for k in SESSION_FIELDS if k != "next_rid")
        + ", next_rid = max(next_rid, excluded.next_rid)",
        (local_id, *fields),
    )
