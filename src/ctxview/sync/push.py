"""Pushing the local store's sessions to PostgreSQL. Idempotent and resumable: a session's rows
go in slices, each slice in one PostgreSQL transaction with the session's watermark (last event
seq, last body rowid), so a push killed anywhere and run again sends each row once. Sync reads
the store and never runs a tool; the only thing it writes locally is the machine's name."""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from ctxview.store.push_source import (
    SESSION_FIELDS,
    SIDE_COLUMNS,
    SIDE_KEYS,
    PushSource,
    machine_name,
)
from ctxview.store.records import EVENT_COLUMNS
from ctxview.store.schema import StoreError
from ctxview.sync.remote import (
    CHANNEL,
    SEARCH_CHARS,
    RemoteError,
    connect,
    event_type,
    retry_after,
    run,
    say,
    trace,
)

EVENTS_PER_TX = max(1, int(os.environ.get("CTXVIEW_SYNC_ROWS", "2000")))  # tests: smaller slices
BODY_BYTES_PER_TX = 16 << 20
FTS_KINDS = ("message", "call", "compaction")


@dataclass
class Mark:
    seq: int
    ts: float | None
    body: int
    fields: tuple[Any, ...] | None
    side: dict[str, int] = field(default_factory=dict)  # request records: the rev last sent


def _search_text(kind: str, tool: str | None, args: str | None, text: str | None) -> str | None:
    if kind not in FTS_KINDS:
        return None
    body = f"{tool or ''} {args or ''}" if kind == "call" else (text or "")
    return body[:SEARCH_CHARS].replace("\x00", " ")


def _nul(value: Any) -> Any:
    # PostgreSQL's text has no NUL character; JSON columns escape theirs, so only free text can.
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


_EV_COLS = ("machine", "session", "seq", *EVENT_COLUMNS, "fts")
_EV_TYPES = ["text", "text", *(event_type(c) for c in ("seq", *EVENT_COLUMNS)), "text"]
_BODY_COLS = ("machine", "session", "rid", "n", "shown", "stored", "fts")
_BODY_TYPES = ["text", "text", "bigint", "bigint", "bytea", "bytea", "text"]


def _stage(table: str, cols: tuple[str, ...], types: list[str]) -> str:
    """A staging table of the connection: the rows as COPY sends them, `words` the text to
    index. Its `fts` is computed by PostgreSQL as each row arrives (a generated column), so the
    server's full-text parse (most of a push's time) runs while the client still sends."""
    columns = [f"{c} {t}" for c, t in zip(cols[:-1], types[:-1], strict=True)]
    return (f"CREATE TEMP TABLE IF NOT EXISTS {table} ({', '.join(columns)}, words text, "
            "fts tsvector GENERATED ALWAYS AS (to_tsvector('simple', words)) STORED) "
            "ON COMMIT DELETE ROWS")  # fmt: skip


# A slice goes by binary COPY into the staging tables, then into the team's tables by one
# INSERT ... SELECT in the slice's transaction (its watermark's): no statement per row, bytea not
# hex-escaped. The staging tables empty themselves at each commit (or rollback).
_STAGE_SQL = (_stage("ctxview_stage_events", _EV_COLS, _EV_TYPES) + "; "
              + _stage("ctxview_stage_bodies", _BODY_COLS, _BODY_TYPES))  # fmt: skip
_EV_SQL = (
    f"INSERT INTO ctxview_events ({', '.join(_EV_COLS)}) "
    f"SELECT {', '.join(_EV_COLS)} FROM ctxview_stage_events "
    "ON CONFLICT (machine, session, seq) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*EVENT_COLUMNS, "fts"))
)
_BODY_SQL = (
    f"INSERT INTO ctxview_bodies ({', '.join(_BODY_COLS)}) "
    f"SELECT {', '.join(_BODY_COLS)} FROM ctxview_stage_bodies "
    "ON CONFLICT (machine, session, rid) DO NOTHING"
)


def _side_sql(table: str, cols: tuple[str, ...]) -> str:
    """A request-record row in, or the newer version of it over the one there: the team's rev
    given anew either way, so a pull past its last rev takes it."""
    key = ("machine", "session", *SIDE_KEYS[table])
    names = ", ".join(("machine", "session", *cols, "rev"))
    return (
        f"INSERT INTO ctxview_{table} ({names}) VALUES "
        f"({', '.join(['%s'] * (len(cols) + 2))}, nextval('ctxview_side_rev')) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in (*cols, "rev") if c not in key)
    )


async def _copy(cur: psycopg.AsyncCursor[Any], table: str, cols: tuple[str, ...],
                types: list[str], rows: list[tuple[Any, ...]]) -> None:  # fmt: skip
    names = ", ".join((*cols[:-1], "words"))
    async with cur.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        for row in rows:
            await copy.write_row(row)


def last_rid(events: list[Any]) -> int:
    at = 1 + EVENT_COLUMNS.index("rid")
    return max((int(e[at]) for e in events if e[at] is not None), default=0)


class Pusher:
    def __init__(self, path: Path, url: str, *, sessions: list[str] | None = None,
                 since: float | None = None, out: Any = None) -> None:  # fmt: skip
        self.path, self.url = path, url
        self.only, self.since = sessions, since
        self.machine = machine_name(path)
        self.local = PushSource(path)
        self.pg: psycopg.AsyncConnection[Any] | None = None
        self.marks: dict[str, Mark] = {}
        self.rows = 0
        self.bytes = 0
        self.out = out
        self.started = time.monotonic()
        self.woke = self.read_at = 0.0  # when a commit was seen, a slice read (trace)

    async def open(self) -> None:
        self.pg = await connect(self.url)
        await self.pg.execute(_STAGE_SQL)
        cur = await self.pg.execute(
            "SELECT id, pushed_seq, pushed_ts, pushed_body, pushed_side, "
            f"{', '.join(SESSION_FIELDS)} FROM ctxview_sessions WHERE machine = %s",
            (self.machine,),
        )
        self.marks = {r[0]: Mark(r[1], r[2], r[3], tuple(r[5:]), json.loads(r[4]))
                      for r in await cur.fetchall()}  # fmt: skip
        await self.pg.commit()

    async def close(self) -> None:
        if self.pg is not None:
            await self.pg.close()
            self.pg = None

    def _sessions(self) -> list[tuple[Any, ...]]:
        return self.local.sessions(self.only, self.since)

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
        got = self.local.slice(sid, mark.seq, mark.body, EVENTS_PER_TX, BODY_BYTES_PER_TX)
        self.read_at = time.time()
        return got

    def _rewound(self, sid: str, mark: Mark) -> bool:
        """The event at the watermark is not the one pushed (an importer took back its last
        message and the seq was given again): send the session's events again."""
        if mark.seq == 0:
            return False
        return not self.local.same_event(sid, mark.seq, mark.ts)

    async def push_session(self, sid: str, fields: tuple[Any, ...]) -> None:
        await self._push_events(sid, fields)
        await self._push_side(sid, fields)

    async def _push_events(self, sid: str, fields: tuple[Any, ...]) -> None:
        assert self.pg is not None
        mark = self.marks.get(sid) or Mark(0, None, 0, None)
        rewind = await asyncio.to_thread(self._rewound, sid, mark)
        if rewind:
            mark = Mark(0, None, mark.body, mark.fields, mark.side)
        events, bodies, more = await asyncio.to_thread(self._slice, sid, mark)
        while True:
            if not events and not bodies and fields == mark.fields and not rewind:
                return
            ahead = Mark(int(events[-1][0]) if events else mark.seq,
                         float(events[-1][1]) if events else mark.ts,
                         int(bodies[-1][0]) if bodies else mark.body, fields,
                         mark.side)  # fmt: skip
            # The next slice is read from SQLite while PostgreSQL works on this one.
            nxt = None
            if more:
                nxt = asyncio.ensure_future(asyncio.to_thread(self._slice, sid, ahead))
            try:
                await self._send(sid, fields, events, bodies, rewind)
            except BaseException:
                if nxt is not None:  # its thread holds the SQLite connection: let it end
                    await asyncio.gather(nxt, return_exceptions=True)
                raise
            rewind = False
            self.marks[sid] = mark = ahead
            if nxt is None:
                return
            events, bodies, more = await nxt

    async def _send(self, sid: str, fields: tuple[Any, ...], events: list[Any], bodies: list[Any],
                    rewind: bool) -> None:  # fmt: skip
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
        begun = time.time()
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
                await _copy(cur, "ctxview_stage_events", _EV_COLS, _EV_TYPES, ev_rows)
                await cur.execute(_EV_SQL)
            if body_rows:
                await _copy(cur, "ctxview_stage_bodies", _BODY_COLS, _BODY_TYPES, body_rows)
                await cur.execute(_BODY_SQL)
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
        trace("push", self.woke, self.read_at, begun, time.time(), last_rid(events))

    async def _push_side(self, sid: str, fields: tuple[Any, ...]) -> None:
        """The session's request records past the revs last sent, in slices, each with the
        shapes and messages they name that the team lacks, in one transaction with its marks.
        Nothing new (the store's newest revs are the marks): one small query, nothing sent."""
        mark = self.marks[sid]
        newest = await asyncio.to_thread(self.local.side_revs, sid)
        if all(newest[t] <= mark.side.get(t, 0) for t in SIDE_COLUMNS):
            return
        while True:
            rows, shared, more = await asyncio.to_thread(
                self.local.side_slice, sid, mark.side, EVENTS_PER_TX, BODY_BYTES_PER_TX
            )
            await self._send_side(sid, fields, rows, shared)
            mark.side = {**mark.side, **{t: int(r[-1][0]) for t, r in rows.items() if r}}
            if not more:
                return

    async def _send_side(self, sid: str, fields: tuple[Any, ...], rows: dict[str, list[Any]],
                         shared: dict[str, list[tuple[str, str]]]) -> None:  # fmt: skip
        assert self.pg is not None
        m = self.machine
        async with self.pg.transaction(), self.pg.cursor() as cur:
            # As `_send`: the session row locked, one pusher of the session at a time.
            await cur.execute(
                "SELECT pushed_side FROM ctxview_sessions WHERE machine = %s AND id = %s "
                "FOR UPDATE", (m, sid),
            )  # fmt: skip
            got = await cur.fetchone()
            assert got is not None  # `_push_events` made it
            sent = json.loads(got[0])
            for table, key in (("api_shapes", "shape"), ("api_blobs", "message")):
                items = shared[table]
                if not items:
                    continue
                # Only what the team lacks: a long session's messages are mostly there.
                await cur.execute(f"SELECT hash FROM ctxview_{table} WHERE hash = ANY(%s)",
                                  ([h for h, _ in items],))  # fmt: skip
                there = {r[0] for r in await cur.fetchall()}
                new = [(h, _nul(v)) for h, v in items if h not in there]
                if new:
                    await cur.executemany(
                        f"INSERT INTO ctxview_{table} (hash, {key}) VALUES (%s, %s) "
                        "ON CONFLICT (hash) DO NOTHING", new,
                    )  # fmt: skip
                    self.rows += len(new)
                    self.bytes += sum(len(v) for _, v in new)
            for table, cols in SIDE_COLUMNS.items():
                # Another push of this machine got further meanwhile: its rows are there.
                todo = [r for r in rows[table] if r[0] > sent.get(table, 0)]
                if not todo:
                    continue
                await cur.executemany(_side_sql(table, cols),
                                      [(m, sid, *map(_nul, r[1:])) for r in todo])  # fmt: skip
                self.rows += len(todo)
                sent[table] = max(sent.get(table, 0), int(todo[-1][0]))
            # The version moves: a pull sees the session changed, as for its events.
            await cur.execute(
                "UPDATE ctxview_sessions SET pushed_side = %s, version = version + 1 "
                "WHERE machine = %s AND id = %s", (json.dumps(sent), m, sid),
            )  # fmt: skip
            await cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{m}\t{sid}"))

    def data_version(self) -> int:
        return self.local.data_version()

    # What `remote.run` needs of a push.
    async def first(self) -> None:
        await self.push_all()

    async def watch(self, away: bool) -> None:
        await _watch(self, dirty=away)

    def summary(self) -> str:
        secs = time.monotonic() - self.started
        return (f"Pushed {self.rows:,} rows ({self.bytes / 1e6:.1f} MB of bodies) of "
                f"{len(self.marks)} sessions as {self.machine} in {secs:.1f} s.")  # fmt: skip

    def close_local(self) -> None:
        self.local.close()


async def push(path: Path, url: str, *, sessions: list[str] | None = None,
               since: float | None = None, watch: bool = False, quiet: bool = False) -> int:  # fmt: skip
    return await run(Pusher(path, url, sessions=sessions, since=since), "push", watch=watch,
                     quiet=quiet)  # fmt: skip


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
        version, pusher.woke = now, time.time()
        try:
            if pusher.pg is None or pusher.pg.closed:
                await pusher.close()
                await pusher.open()
                say(f"reconnected to PostgreSQL; catching up as {pusher.machine}.")
            await pusher.push_all()
            dirty, delay = False, 0.25
        except (psycopg.Error, RemoteError) as exc:
            dirty = True
            delay = await retry_after(exc, pusher.url, delay, pusher.close)
