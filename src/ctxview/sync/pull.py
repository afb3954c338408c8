"""Pulling sessions from PostgreSQL into a local store, a replica the viewer reads as any store.
A pulled session keeps its id and gains its machine (`data.machine`); the rows of a slice and the
session's watermark (kept in the replica's meta) commit in one SQLite transaction, so a pull
killed anywhere and run again copies each row once. `--watch` LISTENs for pushes' NOTIFYs."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import psycopg

from ctxview.store.push_source import SESSION_FIELDS, SIDE_COLUMNS, hashes_named
from ctxview.store.records import EVENT_COLUMNS
from ctxview.store.replica import Replica
from ctxview.sync.push import last_rid
from ctxview.sync.remote import CHANNEL, RemoteError, connect, retry_after, run, trace

ROWS_PER_TX = max(1, int(os.environ.get("CTXVIEW_SYNC_ROWS", "2000")))  # tests: small slices
# A slice's bodies are a quarter of its rows, never none (a slice of none never ends).
BODIES_PER_TX = max(1, ROWS_PER_TX // 4)


class Puller:
    def __init__(self, path: Path, url: str, *, machine: str | None = None,
                 session: str | None = None, since: float | None = None) -> None:  # fmt: skip
        self.path, self.url = path, url
        self.machine, self.session, self.since = machine, session, since
        self.local = Replica(path)
        self.pg: psycopg.AsyncConnection[Any] | None = None
        self.rows = 0
        self.woke = 0.0  # when a NOTIFY came (trace)

    async def open(self) -> None:
        self.pg = await connect(self.url, autocommit=True)

    async def close(self) -> None:
        if self.pg is not None:
            await self.pg.close()
            self.pg = None

    def _mark(self, machine: str, sid: str) -> dict[str, Any]:
        found = self.local.mark(machine, sid)
        return found if found is not None else {"seq": 0, "body": 0, "version": -1, "epoch": 0}

    def _local_id(self, machine: str, sid: str) -> str:
        """The id the session has here: its own, unless another machine's session has it."""
        data = self.local.session_data(sid)
        if data is None:
            return sid
        theirs = json.loads(data).get("machine")
        return sid if theirs in (machine, None) else f"{sid}@{machine}"

    async def pull_all(self, keys: set[tuple[str, str]] | None = None) -> int:
        assert self.pg is not None
        before = self.rows
        where: list[str] = []
        params: list[Any] = []
        if self.machine:
            where.append("machine = %s")
            params.append(self.machine)
        if self.session:
            where.append("id = %s")
            params.append(self.session)
        if self.since is not None:
            where.append("started >= %s")
            params.append(self.since)
        if keys is not None:  # the sessions NOTIFYs named: those rows only, by the primary key
            where.append("(machine, id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))")
            params += [[k[0] for k in keys], [k[1] for k in keys]]
        sql = (f"SELECT machine, id, version, epoch, pushed_side, pushed_body, "
               f"{', '.join(SESSION_FIELDS)} FROM ctxview_sessions")  # fmt: skip
        if where:
            sql += " WHERE " + " AND ".join(where)
        cur = await self.pg.execute(sql + " ORDER BY started", params)
        for r in await cur.fetchall():
            await self.pull_session(r[0], r[1], r[2], r[3], tuple(r[6:]), r[4])
        return self.rows - before

    async def pull_session(self, machine: str, sid: str, version: int, epoch: int,
                           fields: tuple[Any, ...], pushed_side: str = "{}") -> None:  # fmt: skip
        assert self.pg is not None
        mark = await asyncio.to_thread(self._mark, machine, sid)
        local_id = await asyncio.to_thread(self._local_id, machine, sid)
        replace = epoch != mark["epoch"]
        if not replace and mark["version"] == version:
            return  # nothing pushed since it was pulled whole: no query (a pass over N sessions)
        if replace:
            mark["seq"] = 0
        # The request records first: the events' last slice marks the version, so a pull
        # killed before that takes the rest next time.
        if mark.get("pushed_side", "{}") != pushed_side:
            await self._pull_side(machine, sid, local_id, fields, mark, pushed_side)
        while True:
            cur = await self.pg.execute(
                f"SELECT seq, {', '.join(EVENT_COLUMNS)} FROM ctxview_events WHERE machine = %s "
                "AND session = %s AND seq > %s ORDER BY seq LIMIT %s",
                (machine, sid, mark["seq"], ROWS_PER_TX),
            )  # fmt: skip
            events = await cur.fetchall()
            cur = await self.pg.execute(
                "SELECT n, rid, shown, stored FROM ctxview_bodies WHERE machine = %s AND "
                "session = %s AND n > %s ORDER BY n LIMIT %s",
                (machine, sid, mark["body"], BODIES_PER_TX),
            )  # fmt: skip
            bodies = await cur.fetchall()
            fetched = time.time()
            if not events and not bodies and mark["version"] == version and not replace:
                return
            whole = len(events) < ROWS_PER_TX and len(bodies) < BODIES_PER_TX
            await asyncio.to_thread(self._write, machine, sid, local_id, fields, events, bodies,
                                    mark, version if whole else None, epoch, replace)  # fmt: skip
            trace("pull", self.woke, fetched, time.time(), last_rid(events))
            replace = False
            if whole:
                return

    async def _pull_side(self, machine: str, sid: str, local_id: str, fields: tuple[Any, ...],
                         mark: dict[str, Any], pushed_side: str) -> None:  # fmt: skip
        """The session's request records past the team revs last taken, with the shapes and
        messages they name that are not here, a slice and its watermark in one transaction."""
        assert self.pg is not None
        limit = BODIES_PER_TX
        while True:
            side = dict(mark.get("side") or {})
            rows: dict[str, list[Any]] = {}
            for table, cols in SIDE_COLUMNS.items():
                cur = await self.pg.execute(
                    f"SELECT rev, {', '.join(cols)} FROM ctxview_{table} WHERE machine = %s "
                    "AND session = %s AND rev > %s ORDER BY rev LIMIT %s",
                    (machine, sid, side.get(table, 0), limit),
                )  # fmt: skip
                rows[table] = await cur.fetchall()
            miss_shapes, miss_blobs = await asyncio.to_thread(
                self.local.missing, hashes_named(rows["api_requests"])
            )
            shared: dict[str, list[tuple[str, str]]] = {}
            for table, key, want in (("api_shapes", "shape", miss_shapes),
                                     ("api_blobs", "message", miss_blobs)):  # fmt: skip
                cur = await self.pg.execute(
                    f"SELECT hash, {key} FROM ctxview_{table} WHERE hash = ANY(%s)", (sorted(want),)
                )
                shared[table] = [(str(h), str(v)) for h, v in await cur.fetchall()]
            whole = all(len(r) < limit for r in rows.values())
            ahead = dict(mark)
            ahead["side"] = {**side, **{t: int(r[-1][0]) for t, r in rows.items() if r}}
            if whole:
                ahead["pushed_side"] = pushed_side
            names = dict(zip(SESSION_FIELDS, fields, strict=True))
            names["data"] = _with_machine(names["data"], machine)
            await asyncio.to_thread(
                self.local.write_side, machine, sid, local_id, tuple(names.values()),
                {t: [tuple(x[1:]) for x in r] for t, r in rows.items()}, shared, ahead,
            )  # fmt: skip
            mark.update(ahead)
            self.rows += sum(map(len, rows.values())) + sum(map(len, shared.values()))
            if whole:
                return

    def _write(self, machine: str, sid: str, local_id: str, fields: tuple[Any, ...],
               events: list[Any], bodies: list[Any], mark: dict[str, Any], version: int | None,
               epoch: int, replace: bool) -> None:  # fmt: skip
        names = dict(zip(SESSION_FIELDS, fields, strict=True))
        names["data"] = _with_machine(names["data"], machine)
        texts = [(rid, bytes(shown).decode("utf-8", "surrogatepass"),
                  bytes(stored).decode("utf-8", "surrogatepass"))
                 for _n, rid, shown, stored in bodies]  # fmt: skip
        ahead = dict(mark)
        if events:
            ahead["seq"] = int(events[-1][0])
        if bodies:
            ahead["body"] = int(bodies[-1][0])
        # The version is the session's only once its last slice is in: a pull killed before
        # that finds the version unchanged and must not skip the rest.
        if version is not None:
            ahead["version"] = version
        ahead["epoch"] = epoch
        self.local.write_slice(machine, sid, local_id, tuple(names.values()), events, texts,
                               ahead, replace=replace)  # fmt: skip
        mark.update(ahead)
        self.rows += len(events) + len(bodies)

    # What `remote.run` needs of a pull.
    async def first(self) -> None:
        await self.pull_all()

    async def watch(self, away: bool) -> None:
        await _watch(self)  # with the server away, its first loop connects and pulls all

    def summary(self) -> str:
        return f"Pulled {self.rows:,} rows into {self.path}."

    def close_local(self) -> None:
        self.local.close()


def _with_machine(data: str | None, machine: str) -> str:
    """A pulled session's `data` naming the machine it came from."""
    out = json.loads(data or "{}")
    out["machine"] = machine
    return json.dumps(out)


async def pull(path: Path, url: str, *, machine: str | None = None, session: str | None = None,
               since: float | None = None, watch: bool = False, quiet: bool = False) -> int:  # fmt: skip
    puller = Puller(path, url, machine=machine, session=session, since=since)
    return await run(puller, "pull", watch=watch, quiet=quiet)


async def notified(listen: psycopg.AsyncConnection[Any], timeout: float) -> set[tuple[str, str]]:
    """The (machine, session) of every NOTIFY pending, waiting up to `timeout` for the first;
    none: the caller's full pass. All of them: NOTIFYs that came in one packet are read together,
    and leaving the loop at the first dropped the others (their sessions waited for a pass)."""
    keys: set[tuple[str, str]] = set()
    for wait in (timeout, 0.0):  # then what else is pending, without waiting
        async for note in listen.notifies(timeout=wait, stop_after=1 if wait else None):
            machine, _, sid = note.payload.partition("\t")
            keys.add((machine, sid))
        if not keys:
            break
    return keys


async def _watch(puller: Puller) -> None:
    """LISTEN on its own connection; a NOTIFY names a session, which is pulled at once. Every
    few seconds a full pass too (a NOTIFY sent while reconnecting is not kept by PostgreSQL)."""
    delay = 0.25
    while True:
        listen = None
        try:
            if puller.pg is None or puller.pg.closed:
                await puller.close()
                await puller.open()
                await puller.pull_all()
            listen = await connect(puller.url, autocommit=True)
            await listen.execute(f"LISTEN {CHANNEL}")
            await puller.pull_all()  # what came between the first pass and LISTEN
            delay = 0.25
            while True:
                keys = await notified(listen, 3.0)
                puller.woke = time.time()
                await puller.pull_all(keys if keys else None)
        except (psycopg.Error, RemoteError) as exc:
            delay = await retry_after(exc, puller.url, delay, puller.close)
        finally:
            if listen is not None:
                await listen.close()
