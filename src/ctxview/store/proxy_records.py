"""What `ctxview proxy` saw of each request (schema 6): its place, path, status, timings, the
headers without credentials, how its body is rebuilt, and its reassembled answer.

A request the model answers is also an `api_requests` row, its messages and system+tools
shape in `api_blobs` / `api_shapes`, shared with the import of Claude Code's own records (written
by `store/requests.py`; this module writes and reads the proxy's own table). Its `n` there is `PROXY_N + seq`, past any an import gives, so the two
never take each other's rows; each names the request it follows (`base`) explicitly."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Protocol

PROXY_N = 1 << 32

TABLES = """
CREATE TABLE IF NOT EXISTS proxy_records (
    session          TEXT NOT NULL,
    seq              INTEGER NOT NULL,             -- the proxy's order within the session
    request_id       TEXT NOT NULL,                -- api_requests.id when `api_n` is set
    api_n            INTEGER,                      -- the api_requests row, NULL if none
    protocol         TEXT NOT NULL,                -- anthropic-messages | openai-responses | ...
    method           TEXT NOT NULL,
    path             TEXT NOT NULL,                -- as forwarded, with its query
    upstream         TEXT NOT NULL,
    started          REAL NOT NULL,                -- wall clock, seconds
    first_byte_ms    REAL,                         -- to the upstream's first answer byte
    total_ms         REAL,
    status           INTEGER,                      -- the upstream's, or the proxy's own 502
    outcome          TEXT NOT NULL,                -- complete | cut | incomplete | upstream-failed
    note             TEXT,                         -- one sentence when not complete
    request_headers  TEXT NOT NULL,                -- JSON [[name, value]]: credentials left out
    response_headers TEXT,
    body_bytes       INTEGER NOT NULL,
    body_sha256      TEXT NOT NULL,
    parsed           INTEGER NOT NULL,             -- 1: the body is rebuilt from shared rows
    layout           TEXT,                         -- JSON: how (see proxy/record.py)
    body_raw         BLOB,                         -- the body itself when not rebuilt
    answer           TEXT,                         -- the reassembled answer, JSON
    answer_raw       BLOB,                         -- an answer that is not JSON (first MB)
    usage            TEXT,                         -- JSON, the answer's own
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS proxy_records_started ON proxy_records (started);
"""


@dataclass
class ProxyRow:
    session: str
    seq: int
    request_id: str
    api_n: int | None
    protocol: str
    method: str
    path: str
    upstream: str
    started: float
    first_byte_ms: float | None
    total_ms: float | None
    status: int | None
    outcome: str
    note: str | None
    request_headers: str
    response_headers: str | None
    body_bytes: int
    body_sha256: str
    parsed: int
    layout: str | None
    body_raw: bytes | None
    answer: str | None
    answer_raw: bytes | None
    usage: str | None


_COLS = tuple(f.name for f in fields(ProxyRow))
_INSERT = (f"INSERT OR REPLACE INTO proxy_records ({', '.join(_COLS)}) "
           f"VALUES ({', '.join('?' * len(_COLS))})")  # fmt: skip
SOURCE = "proxy"  # a session the proxy alone has seen: the first engine to open it takes it over
NEW_SESSION = (
    "INSERT OR IGNORE INTO sessions (id, title, workspace, source, started, next_rid, data, "
    f"lease_until) VALUES (?, ?, ?, '{SOURCE}', ?, 4096, ?, NULL)"
)


class InTurn(Protocol):
    """The writer's face this module needs (the writer imports the schema, which imports this)."""

    async def in_turn(self, fn: Callable[..., Any], *args: Any) -> Any: ...


async def write(writer: InTurn, row: ProxyRow, *, title: str, workspace: str) -> None:
    """The session when it is new (a `proxy` one), then the record (inside the caller's
    `writer.transaction()`, with its api_* rows)."""
    session = (row.session, title, workspace, row.started, json.dumps({"proxied": True}))
    await writer.in_turn(_write, session, tuple(getattr(row, c) for c in _COLS))


def _write(conn: sqlite3.Connection, session: tuple[Any, ...], record: tuple[Any, ...]) -> None:
    conn.execute(NEW_SESSION, session)
    conn.execute(_INSERT, record)


_READ = f"SELECT {', '.join(_COLS)} FROM proxy_records"


def _table(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'proxy_records'").fetchone()
        is not None
    )


def read(conn: sqlite3.Connection, session: str) -> list[ProxyRow]:
    """A session's proxied requests in order ([] for a store from before schema 6)."""
    if not _table(conn):
        return []
    found = conn.execute(f"{_READ} WHERE session = ? ORDER BY seq", (session,))
    return [ProxyRow(*r) for r in found]


def sessions(conn: sqlite3.Connection) -> list[tuple[str, int, float]]:
    """Sessions with proxied requests: (id, requests, last started), newest first."""
    if not _table(conn):
        return []
    return [(s, int(n), float(t)) for s, n, t in conn.execute(
        "SELECT session, count(*), max(started) FROM proxy_records GROUP BY session "
        "ORDER BY max(started) DESC")]  # fmt: skip


async def session_of_answer(writer: InTurn, answer_id: str) -> str | None:
    """The session of the recorded request a Responses answer with this id answered (what a
    later request's `previous_response_id` continues), or None."""
    return await writer.in_turn(_session_of_answer, answer_id)  # type: ignore[no-any-return]


def _session_of_answer(conn: sqlite3.Connection, answer_id: str) -> str | None:
    if not _table(conn):
        return None
    row = conn.execute(
        "SELECT session FROM proxy_records WHERE protocol = 'openai-responses' AND "
        "(CASE WHEN json_valid(answer) THEN json_extract(answer, '$.id') END) = ? "
        "ORDER BY started DESC LIMIT 1", (answer_id,),
    ).fetchone()  # fmt: skip
    return str(row[0]) if row else None


async def write_texts(writer: InTurn, session: str, texts: dict[int, str]) -> None:
    """The texts `--elide` sent as stubs, each under its content id as a result body of the
    session (so `recall` finds it), indexed for search; one already stored is left as it is.
    No event: the id is not the session's counter's, and the proxy writes no transcript."""
    if texts:
        await writer.in_turn(_write_texts, session, sorted(texts.items()))


def _write_texts(conn: sqlite3.Connection, session: str, items: list[tuple[int, str]]) -> None:
    for rid, text in items:
        cur = conn.execute(
            "INSERT OR IGNORE INTO bodies (session, rid, shown, stored) VALUES (?, ?, ?, ?)",
            (session, rid, text, text),
        )
        if cur.rowcount:
            conn.execute(
                "INSERT INTO bodies_fts (rowid, stored) VALUES ((SELECT rowid FROM bodies "
                "WHERE session = ?1 AND rid = ?2), ?3)", (session, rid, text[:1_000_000]),
            )  # fmt: skip


def read_texts(conn: sqlite3.Connection, session: str, rids: list[int]) -> dict[int, str]:
    """Stored texts by id (the elided blocks a replay without elision puts back)."""
    out: dict[int, str] = {}
    for i in range(0, len(rids), 500):
        part = rids[i : i + 500]
        marks = ",".join("?" * len(part))
        for rid, text in conn.execute(
            f"SELECT rid, CAST(stored AS TEXT) FROM bodies WHERE session = ? AND rid IN ({marks})",
            (session, *part),
        ):
            out[int(rid)] = text
    return out
