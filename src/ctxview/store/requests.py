"""The request-record tables (schema 5, `schema.API_TABLES`): Claude Code's own record of each
API request, written as an importer gives its rows and read back as they are stored. Turning
the rows into requests is context/requests.py: the store knows no format.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class RequestRow(NamedTuple):
    """One `api_requests` row as written (JSON columns already serialised)."""

    n: int
    id: str
    ts: float | None
    query_source: str | None
    shape_hash: str | None
    base: str | None
    keep: int
    tail: str  # JSON list of message hashes
    params: str  # JSON
    cache_control: str  # JSON
    digest: str | None


@dataclass
class RequestRecords:
    """What one transcript record adds to the request tables."""

    shapes: Sequence[tuple[str, str]] = ()  # (hash, shape JSON)
    blobs: Sequence[tuple[str, str]] = ()  # (hash, canonical message JSON)
    requests: Sequence[RequestRow] = ()
    usage: Sequence[tuple[str, str]] = ()  # (request id, usage JSON)
    cost: str | None = None  # the latest cost-state record, JSON

    def __bool__(self) -> bool:
        return bool(self.shapes or self.blobs or self.requests or self.usage
                    or self.cost is not None)  # fmt: skip


@dataclass
class StoredRequests:
    """A session's request rows in order (JSON columns decoded), and the shapes and messages
    they name, by hash."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    shapes: dict[str, dict[str, Any]] = field(default_factory=dict)
    blobs: dict[str, dict[str, Any]] = field(default_factory=dict)


_SQL_SHAPE = "INSERT OR IGNORE INTO api_shapes (hash, shape) VALUES (?, ?)"
_SQL_BLOB = "INSERT OR IGNORE INTO api_blobs (hash, message) VALUES (?, ?)"
_SQL_REQUEST = (
    "INSERT OR REPLACE INTO api_requests (session, n, id, ts, query_source, shape_hash, base, "
    "keep, tail, params, cache_control, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_USAGE = "UPDATE api_requests SET usage = ? WHERE session = ? AND id = ?"
_SQL_COST = "INSERT OR REPLACE INTO api_costs (session, cost) VALUES (?, ?)"


def write(conn: sqlite3.Connection, session: str, records: RequestRecords) -> None:
    """Store what one record added: statements in the order the rows depend on (a usage
    updates a request already written), in the caller's transaction when there is one."""
    if records.shapes:
        conn.executemany(_SQL_SHAPE, records.shapes)
    if records.blobs:
        conn.executemany(_SQL_BLOB, records.blobs)
    if records.requests:
        conn.executemany(_SQL_REQUEST, [(session, *r) for r in records.requests])
    if records.usage:
        conn.executemany(_SQL_USAGE, [(u, session, i) for i, u in records.usage])
    if records.cost is not None:
        conn.execute(_SQL_COST, (session, records.cost))


_TABLE_SQL = "SELECT 1 FROM sqlite_master WHERE name = 'api_requests'"
_COLS = ("n", "id", "ts", "query_source", "shape_hash", "base", "keep", "tail", "params",
         "cache_control", "digest", "usage")  # fmt: skip
_JSON_COLS = ("tail", "params", "cache_control", "usage")
_ROWS_SQL = f"SELECT {', '.join(_COLS)} FROM api_requests WHERE session = ? ORDER BY n"
_SHAPES_SQL = ("SELECT hash, shape FROM api_shapes WHERE hash IN (SELECT DISTINCT shape_hash "
               "FROM api_requests WHERE session = ?)")  # fmt: skip
_BLOBS_PER_QUERY = 500  # under SQLite's limit on bound parameters


def read(conn: sqlite3.Connection, session: str) -> StoredRequests:
    """A session's request rows with what they name; empty when its transcript had none (or
    the store predates schema 5 and is read as it is)."""
    if conn.execute(_TABLE_SQL).fetchone() is None:
        return StoredRequests()
    rows = [dict(zip(_COLS, r, strict=True)) for r in conn.execute(_ROWS_SQL, (session,))]
    if not rows:
        return StoredRequests()
    for r in rows:
        for k in _JSON_COLS:
            r[k] = json.loads(r[k]) if r[k] else None
    hashes = sorted({h for r in rows for h in r["tail"] or []})
    blobs: dict[str, dict[str, Any]] = {}
    for i in range(0, len(hashes), _BLOBS_PER_QUERY):
        part = hashes[i : i + _BLOBS_PER_QUERY]
        sql = f"SELECT hash, message FROM api_blobs WHERE hash IN ({', '.join('?' * len(part))})"
        blobs.update((h, json.loads(m)) for h, m in conn.execute(sql, part))
    shapes = {h: json.loads(x) for h, x in conn.execute(_SHAPES_SQL, (session,))}
    return StoredRequests(rows, shapes, blobs)


def read_cost(conn: sqlite3.Connection, session: str) -> dict[str, Any] | None:
    """The transcript's own last cost-state record, or None."""
    if conn.execute(_TABLE_SQL).fetchone() is None:
        return None
    row = conn.execute("SELECT cost FROM api_costs WHERE session = ?", (session,)).fetchone()
    if row is None:
        return None
    cost: dict[str, Any] = json.loads(row[0])
    return cost
