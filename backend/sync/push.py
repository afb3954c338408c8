"""Pushing the local store's sessions to PostgreSQL. Idempotent and resumable: a session's rows
go in slices, each slice in one PostgreSQL transaction with the session's watermark (last event
seq, last body rowid), so a push killed anywhere and run again sends each row once. Sync reads
the store and never runs a tool; the only thing it writes locally is the machine's name."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from ..store import schema
from ..store.records import EVENT_COLUMNS
from ..store.schema import StoreError
from .remote import CHANNEL, SEARCH_CHARS, RemoteError, connect, sentence, transient

EVENTS_PER_TX = int(os.environ.get("CTXVIEW_SYNC_ROWS", "2000"))  # tests: smaller slices
BODY_BYTES_PER_TX = 16 << 20
SESSION_FIELDS = ("title", "workspace", "source", "source_path", "source_ref", "parent_session",
                  "parent_call", "started", "ended", "config", "next_rid", "data",
                  "lease_until")  # fmt: skip
FTS_KINDS = ("message", "call", "compaction")


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


def open_local(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise StoreError(f"There is no store at {path}; nothing to push.")
    uri = "file:" + quote(str(path.absolute())) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 10000")
    schema.check(conn)
    return conn


@dataclass
class Mark:
    seq: int
    ts: float | None
    body: int
    fields: tuple[Any, ...] | None


def _search_text(kind: str, tool: str | None, args: str | None, text: str | None) -> str | None:
    if kind not in FTS_KINDS:
        return None
    body = f"{tool or ''} {args or ''}" if kind == "call" else (text or "")
    return body[:SEARCH_CHARS].replace("\x00", " ")


def _nul(value: Any) -> Any:
    # PostgreSQL's text has no NUL character; JSON columns escape theirs, so only free text can.
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


_EV_COLS = ("machine", "session", "seq", *EVENT_COLUMNS, "fts")
_EV_SQL = (
    f"INSERT INTO ctxview_events ({', '.join(_EV_COLS)}) VALUES "
    f"({', '.join(['%s'] * (len(_EV_COLS) - 1))}, to_tsvector('simple', %s)) "
    "ON CONFLICT (machine, session, seq) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*EVENT_COLUMNS, "fts"))
)
_BODY_SQL = (
    "INSERT INTO ctxview_bodies (machine, session, rid, n, shown, stored, fts) "
    "VALUES (%s, %s, %s, %s, %s, %s, to_tsvector('simple', %s)) "
    "ON CONFLICT (machine, session, rid) DO NOTHING"
)


class Pusher:
    def __init__(self, path: Path, url: str, *, sessions: list[str] | None = None,
                 since: float | None = None, out: Any = None) -> None:  # fmt: skip
        self.path, self.url = path, url
        self.only, self.since = sessions, since
        self.machine = machine_name(path)
        self.local = open_local(path)
        self.pg: psycopg.AsyncConnection[Any] | None = None
        self.marks: dict[str, Mark] = {}
        self.rows = 0
        self.bytes = 0
        self.out = out

    async def open(self) -> None:
        self.pg = await connect(self.url)
        cur = await self.pg.execute(
            "SELECT id, pushed_seq, pushed_ts, pushed_body, "
            f"{', '.join(SESSION_FIELDS)} FROM ctxview_sessions WHERE machine = %s",
            (self.machine,),
        )
        self.marks = {r[0]: Mark(r[1], r[2], r[3], tuple(r[4:])) for r in await cur.fetchall()}
        await self.pg.commit()

    async def close(self) -> None:
        if self.pg is not None:
            await self.pg.close()
            self.pg = None

    def _sessions(self) -> list[tuple[Any, ...]]:
        where, params = [], []
        if self.only:
            where.append(f"id IN ({', '.join('?' * len(self.only))})")
            params += self.only
        if self.since is not None:
            where.append("started >= ?")
            params.append(self.since)
        sql = f"SELECT id, {', '.join(SESSION_FIELDS)} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return self.local.execute(sql + " ORDER BY started", params).fetchall()

    async def push_all(self) -> int:
        """One pass over every chosen session; the number of rows sent."""
        before = self.rows
        rows = await asyncio.to_thread(self._sessions)
        if self.only:
            missing = set(self.only) - {r[0] for r in rows}
            if missing:
                raise StoreError(f"There is no session {sorted(missing)[0]} in {self.path}.")
        for row in rows:
            await self.push_session(row[0], tuple(row[1:]))
        return self.rows - before

    def _slice(self, sid: str, mark: Mark) -> tuple[list[Any], list[Any], bool]:
        """The next events and bodies after the watermark, read in one snapshot."""
        c = self.local
        c.execute("BEGIN")
        try:
            events = c.execute(
                f"SELECT seq, {', '.join(EVENT_COLUMNS)} FROM events WHERE session = ? "
                "AND seq > ? ORDER BY seq LIMIT ?", (sid, mark.seq, EVENTS_PER_TX),
            ).fetchall()  # fmt: skip
            bodies: list[Any] = []
            size = 0
            for r in c.execute(
                "SELECT rowid, rid, shown, CAST(stored AS TEXT) FROM bodies "
                "WHERE session = ? AND rowid > ? ORDER BY rowid", (sid, mark.body),
            ):  # fmt: skip
                bodies.append(r)
                size += len(r[2]) + len(r[3])
                if size >= BODY_BYTES_PER_TX or len(bodies) >= EVENTS_PER_TX:
                    break
            more = len(events) >= EVENTS_PER_TX or size >= BODY_BYTES_PER_TX or (
                len(bodies) >= EVENTS_PER_TX)
        finally:
            c.execute("COMMIT")
        return events, bodies, more

    def _rewound(self, sid: str, mark: Mark) -> bool:
        """The event at the watermark is not the one pushed (an importer took back its last
        message and the seq was given again): send the session's events again."""
        if mark.seq == 0:
            return False
        row = self.local.execute(
            "SELECT ts FROM events WHERE session = ? AND seq = ?", (sid, mark.seq)
        ).fetchone()
        return row is None or row[0] != mark.ts

    async def push_session(self, sid: str, fields: tuple[Any, ...]) -> None:
        assert self.pg is not None
        mark = self.marks.get(sid) or Mark(0, None, 0, None)
        rewind = await asyncio.to_thread(self._rewound, sid, mark)
        if rewind:
            mark = Mark(0, None, mark.body, mark.fields)
        while True:
            events, bodies, more = await asyncio.to_thread(self._slice, sid, mark)
            if not events and not bodies and fields == mark.fields and not rewind:
                return
            await self._send(sid, fields, mark, events, bodies, rewind)
            rewind = False
            if events:
                mark.seq, mark.ts = int(events[-1][0]), float(events[-1][1])
            if bodies:
                mark.body = int(bodies[-1][0])
            mark.fields = fields
            self.marks[sid] = mark
            if not more:
                return

    async def _send(self, sid: str, fields: tuple[Any, ...], mark: Mark, events: list[Any],
                    bodies: list[Any], rewind: bool) -> None:  # fmt: skip
        assert self.pg is not None
        m = self.machine
        ev_rows = []
        kind_at, tool_at = 1 + EVENT_COLUMNS.index("kind"), 1 + EVENT_COLUMNS.index("tool")
        args_at, text_at = 1 + EVENT_COLUMNS.index("args"), 1 + EVENT_COLUMNS.index("text")
        for e in events:
            fts = _search_text(e[kind_at], e[tool_at], e[args_at], e[text_at])
            ev_rows.append((m, sid, *map(_nul, e), fts))
        body_rows = []
        for n, rid, shown, stored in bodies:
            s_b = stored.encode("utf-8", "surrogatepass")
            self.bytes += len(s_b) + len(shown)
            body_rows.append((m, sid, rid, n, shown.encode("utf-8", "surrogatepass"), s_b,
                              stored[:SEARCH_CHARS].replace("\x00", " ")))  # fmt: skip
        cols = ", ".join(SESSION_FIELDS)
        async with self.pg.transaction(), self.pg.cursor() as cur:
            # The session row first, locked: one pusher at a time per session keeps the
            # bodies' order (pull's watermark) the order of their commits.
            await cur.execute(
                f"INSERT INTO ctxview_sessions (machine, id, {cols}) VALUES "
                f"(%s, %s, {', '.join(['%s'] * len(SESSION_FIELDS))}) "
                "ON CONFLICT (machine, id) DO NOTHING", (m, sid, *map(_nul, fields)),
            )  # fmt: skip
            await cur.execute(
                "SELECT pushed_seq, pushed_body FROM ctxview_sessions "
                "WHERE machine = %s AND id = %s FOR UPDATE", (m, sid),
            )  # fmt: skip
            got = await cur.fetchone()
            assert got is not None
            # Another push of this machine got further meanwhile: its rows are there.
            ev_rows = [r for r in ev_rows if rewind or r[2] > got[0]]
            body_rows = [r for r in body_rows if r[3] > got[1]]
            if ev_rows:
                await cur.executemany(_EV_SQL, ev_rows)
            if body_rows:
                await cur.executemany(_BODY_SQL, body_rows)
            if rewind:
                last = events[-1][0] if events else 0
                await cur.execute("DELETE FROM ctxview_events WHERE machine = %s AND "
                                  "session = %s AND seq > %s", (m, sid, last))  # fmt: skip
            seq = max(int(events[-1][0]), 0) if events else None
            ts = float(events[-1][1]) if events else None
            body = int(bodies[-1][0]) if bodies else None
            await cur.execute(
                f"UPDATE ctxview_sessions SET ({cols}) = "
                f"({', '.join(['%s'] * len(SESSION_FIELDS))}), "
                "pushed_seq = CASE WHEN %s THEN coalesce(%s, 0) "
                "ELSE greatest(pushed_seq, coalesce(%s, pushed_seq)) END, "
                "pushed_ts = CASE WHEN %s OR coalesce(%s, 0) >= pushed_seq "
                "THEN coalesce(%s, pushed_ts) ELSE pushed_ts END, "
                "pushed_body = greatest(pushed_body, coalesce(%s, pushed_body)), "
                "epoch = epoch + %s, version = version + 1 "
                "WHERE machine = %s AND id = %s",
                (*map(_nul, fields), rewind, seq, seq, rewind, seq, ts, body, int(rewind),
                 m, sid),
            )  # fmt: skip
            await cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{m}\t{sid}"))
        self.rows += len(ev_rows) + len(body_rows)

    def data_version(self) -> int:
        return int(self.local.execute("PRAGMA data_version").fetchone()[0])


def say(message: str) -> None:
    print(f"ctxview: {message}", file=sys.stderr, flush=True)


async def push(path: Path, url: str, *, sessions: list[str] | None = None,
               since: float | None = None, watch: bool = False, quiet: bool = False) -> int:  # fmt: skip
    pusher = Pusher(path, url, sessions=sessions, since=since)
    started = time.monotonic()
    try:
        try:
            await pusher.open()
            await pusher.push_all()
        except (psycopg.Error, RemoteError) as exc:
            error = exc if isinstance(exc, RemoteError) else RemoteError(
                sentence(exc, url, "push"), transient(exc))
            if not (watch and error.transient):
                raise error from None
            # --watch with the server away from the start: wait for it as for a restart.
            say(f"{error} Retrying.")
            await pusher.close()
            await _watch(pusher, dirty=True)
        if not quiet:
            secs = time.monotonic() - started
            print(f"Pushed {pusher.rows:,} rows ({pusher.bytes / 1e6:.1f} MB of bodies) of "
                  f"{len(pusher.marks)} sessions as {pusher.machine} in {secs:.1f} s.",
                  flush=True)  # fmt: skip
        if watch:
            await _watch(pusher)
    finally:
        await pusher.close()
        pusher.local.close()
    return 0


async def _watch(pusher: Pusher, poll: float = 0.05, dirty: bool = False) -> None:
    """Follow the store: a commit changes SQLite's data_version; push then. The server gone:
    retry with backoff, then a full pass (the watermarks say what is missing)."""
    version = pusher.data_version()
    delay = 0.25
    while True:
        await asyncio.sleep(poll)
        now = await asyncio.to_thread(pusher.data_version)
        if now == version and not dirty:
            continue
        version = now
        try:
            if pusher.pg is None or pusher.pg.closed:
                await pusher.close()
                await pusher.open()
                say(f"reconnected to PostgreSQL; catching up as {pusher.machine}.")
            await pusher.push_all()
            dirty, delay = False, 0.25
        except (psycopg.Error, RemoteError) as exc:
            if not transient(exc):  # a wrong password or a newer schema: waiting will not help
                raise exc if isinstance(exc, RemoteError) else RemoteError(
                    sentence(exc, pusher.url)) from None
            text = str(exc) if isinstance(exc, RemoteError) else sentence(exc, pusher.url)
            say(text + f" Retrying in {delay:g} s.")
            await pusher.close()
            dirty = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
