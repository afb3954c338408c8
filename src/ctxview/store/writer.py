"""The store's writer: each step of a live session is one committed transaction; an import batches."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from ctxview.store import proxy_records, requests, tree
from ctxview.store.connect import fetch_all, on_thread, open_connection
from ctxview.store.records import EVENT_COLUMNS, Body, Event, Pending
from ctxview.store.schema import StoreError
from ctxview.store.tree import IdSpace

T = TypeVar("T")

_EVENT_SQL = (
    f"INSERT INTO events (session, seq, {', '.join(EVENT_COLUMNS)}) VALUES "
    f"(?1, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE session = ?1), "
    f"{', '.join('?' for _ in EVENT_COLUMNS)})"
)
_BODY_SQL = "INSERT INTO bodies (session, rid, shown, stored) VALUES (?, ?, ?, ?)"
_FTS_SQL = (
    "INSERT INTO bodies_fts (rowid, stored) "
    "VALUES ((SELECT rowid FROM bodies WHERE session = ?1 AND rid = ?2), ?3)"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _write(
    conn: sqlite3.Connection, session: str, pending: Sequence[Pending], fts_max_chars: int
) -> None:
    """One transaction. Text that is not valid Unicode (a lone surrogate, which a JSON escape
    can carry) cannot be encoded for SQLite: it is stored with U+FFFD in its place. Looking for
    one only after the encoder refused keeps a 200 MB body from being scanned twice."""
    try:
        _write_once(conn, session, pending, fts_max_chars, clean=False)
    except UnicodeEncodeError:
        _write_once(conn, session, pending, fts_max_chars, clean=True)


def _write_once(
    conn: sqlite3.Connection,
    session: str,
    pending: Sequence[Pending],
    fts_max_chars: int,
    *,
    clean: bool,
) -> None:
    fix = _clean if clean else _same
    events = [(session, *e.values()) for p in pending for e in p.events]
    if clean:
        events = [tuple(map(_clean, row)) for row in events]
    bodies = [(session, b.rid, fix(b.shown), fix(b.stored)) for p in pending for b in p.bodies]
    limits = [p.fts_max_chars if p.fts_max_chars is not None else fts_max_chars
              for p in pending for _ in p.bodies]  # fmt: skip
    # Inside a caller's transaction (`Writer.transaction`) a savepoint, so that the retry above
    # does not find the first attempt's rows; else a transaction of its own.
    own = not conn.in_transaction
    conn.execute("BEGIN IMMEDIATE" if own else "SAVEPOINT write_step")
    try:
        conn.executemany(_EVENT_SQL, events)
        conn.executemany(_BODY_SQL, [b for b in bodies if len(b[3]) <= BIG_CHARS])
        for session_, rid, shown, stored in bodies:
            if len(stored) > BIG_CHARS:
                _write_big(conn, session_, rid, shown, stored)
        # Only the first fts.max_chars of a body are indexed; the slice is the only copy made.
        conn.executemany(
            _FTS_SQL,
            [(s, rid, stored[:n]) for (s, rid, _, stored), n in zip(bodies, limits, strict=True)],
        )
        conn.execute("COMMIT" if own else "RELEASE write_step")
    except BaseException:
        if own and conn.in_transaction:
            conn.execute("ROLLBACK")
        elif not own and conn.in_transaction:
            conn.execute("ROLLBACK TO write_step")
            conn.execute("RELEASE write_step")
        raise


# A body longer than this is written in pieces: bound as a parameter, SQLite would hold two more
# whole copies of it (the bound value and the record it builds), 400 MB for a 200 MB output.
BIG_CHARS = 8 << 20
PIECE_CHARS = 1 << 20


def _write_big(conn: sqlite3.Connection, session: str, rid: int, shown: str, stored: str) -> None:
    """Reserve the body's bytes with zeroblob and fill them a piece at a time. The value is then
    a BLOB of UTF-8 rather than TEXT: readers select `CAST(stored AS TEXT)`, the same text."""
    pieces = range(0, len(stored), PIECE_CHARS)
    if stored.isascii():  # O(1) in CPython: one byte per character
        size = len(stored)
    else:
        size = sum(len(stored[i : i + PIECE_CHARS].encode("utf-8")) for i in pieces)
    cur = conn.execute(
        "INSERT INTO bodies (session, rid, shown, stored) VALUES (?, ?, ?, zeroblob(?))",
        (session, rid, shown, size),
    )
    assert cur.lastrowid is not None
    with conn.blobopen("bodies", "stored", cur.lastrowid) as blob:
        for i in pieces:
            blob.write(stored[i : i + PIECE_CHARS].encode("utf-8"))


def _stored_data(conn: sqlite3.Connection, session: str, rid: int) -> str | bytes | None:
    row = conn.execute(
        "SELECT rowid, typeof(stored) FROM bodies WHERE session = ? AND rid = ?", (session, rid)
    ).fetchone()
    if row is None:
        return None
    if row[1] == "blob":
        with conn.blobopen("bodies", "stored", row[0], readonly=True) as blob:
            return blob.read()
    stored: str = conn.execute("SELECT stored FROM bodies WHERE rowid = ?", (row[0],)).fetchone()[0]
    return stored


def _same(value: Any) -> Any:
    return value


def _clean(value: Any) -> Any:
    return _SURROGATE.sub("\ufffd", value) if isinstance(value, str) else value


# A writer's lease on the sessions it writes (schema 4): set this far ahead, renewed every
# LEASE_RENEW seconds while the writer is open. A writer killed outright stops being "live" in a
# viewer at most LEASE_SECONDS later; one that closes, at once.
LEASE_SECONDS = 15.0
LEASE_RENEW = 5.0


class Writer:
    """One long-lived connection that writes. Several processes may each hold one (busy timeout)."""

    def __init__(
        self, conn: aiosqlite.Connection, path: Path, fts_max_chars: int = 1_000_000
    ) -> None:
        self._conn = conn
        self.path = path
        self.fts_max_chars = fts_max_chars
        self._batch: dict[str, list[Pending]] | None = None
        self._batch_size = 0
        self._tx: list[Any] | None = None  # in `transaction`: [lock taken, its check]
        # The task that batches (and holds the transaction): another task's writes (another
        # session's hook in the same process) neither join its batch nor its transaction.
        self._owner: asyncio.Task[Any] | None = None
        self._no_tx = asyncio.Event()
        self._no_tx.set()
        self._leased: set[str] = set()  # the sessions this writer keeps live
        self._lease_value = 0.0  # the lease_until it last wrote
        self._lease_task: asyncio.Task[None] | None = None
        self._lease_wake = asyncio.Event()
        self._closing = False
        self._id_spaces: dict[str, IdSpace] = {}  # tree root -> its counter (`id_space`)

    @classmethod
    async def open(cls, path: Path | str, *, fts_max_chars: int = 1_000_000) -> Writer:
        path = Path(path)
        conn = await open_connection(path, create=True)
        return cls(conn, path, fts_max_chars)

    async def close(self) -> None:
        """Commit what is queued, end the leases, close the connection; the connection is closed
        even when the commit fails (a store kept locked past the busy timeout): its thread would
        otherwise keep the process from ever exiting."""
        try:
            await self.flush()
        finally:
            try:
                await self._release()
            finally:
                await self._conn.close()

    # The lease: a session is live while a writer is attached to it.

    def _lease(self, session_id: str) -> None:
        """Keep `session_id` live while this writer is open. Written by the renewing task, not
        inline: the hot path (a hook's insert) takes no extra await."""
        if session_id in self._leased or self._closing:
            return
        self._leased.add(session_id)
        self._lease_wake.set()
        if self._lease_task is None or self._lease_task.done():
            self._lease_task = asyncio.get_running_loop().create_task(
                self._renew_leases(), name="ctxview-lease"
            )

    def keep_live(self, session_id: str) -> None:
        """Keep a session this writer wrote other rows of (the proxy's records) live while it is
        open, as its events would."""
        self._lease(session_id)

    def _unlease(self, session_id: str) -> None:
        self._leased.discard(session_id)

    async def _renew_leases(self) -> None:
        while self._leased and not self._closing:
            self._lease_wake.clear()
            until = time.time() + LEASE_SECONDS
            ids = sorted(self._leased)
            marks = ",".join("?" for _ in ids)
            # Before the write: a close that cancels this await still knows the value the
            # statement (already queued on the connection's thread) writes.
            self._lease_value = max(self._lease_value, until)
            # One statement, autocommit: inside a caller's open transaction it simply commits
            # with it. Busy past the timeout, or closing: next time.
            with contextlib.suppress(sqlite3.Error, ValueError):
                await self._conn.execute(
                    f"UPDATE sessions SET lease_until = ? WHERE id IN ({marks}) AND ended IS NULL",
                    (until, *ids),
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LEASE_RENEW):
                    await self._lease_wake.wait()

    async def _release(self) -> None:
        """Closing: the sessions stop being live now, unless another writer renewed their lease
        since (its value is later than ours)."""
        # The renewing task is woken and ends by itself, never cancelled: on 3.11 a cancel that
        # meets a wait_for whose event was just set is swallowed, and the loop ran forever.
        self._closing = True
        task, self._lease_task = self._lease_task, None
        if task is not None:
            self._lease_wake.set()
            await asyncio.gather(task, return_exceptions=True)
        ids, self._leased = sorted(self._leased), set()
        if not ids:
            return
        marks = ",".join("?" for _ in ids)
        with contextlib.suppress(sqlite3.Error):
            await self._conn.execute(
                f"UPDATE sessions SET lease_until = ? WHERE id IN ({marks}) "
                "AND (lease_until IS NULL OR lease_until <= ?)",
                (time.time(), *ids, self._lease_value),
            )

    async def __aenter__(self) -> Writer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def create_session(
        self,
        session_id: str,
        *,
        title: str = "",
        workspace: str = "",
        source: str = "live",
        config: str = "{}",
        next_rid: int,
        started: float | None = None,
        source_path: str | None = None,
        source_ref: str | None = None,
        parent_session: str | None = None,
        parent_call: str | None = None,
        data: str = "{}",
    ) -> None:
        await self._wait_turn()
        await self._lock()
        lease = time.time() + LEASE_SECONDS  # live from the start (see `_lease`)
        # The proxy's row for a session it saw first (its recorder, another process, may write
        # it at any moment) is taken over: this engine's fields, the proxy's data kept and its
        # start (the first request). Any other session of that id stays a conflict.
        cur = await self._conn.execute(
            "INSERT INTO sessions (id, title, workspace, source, source_path, source_ref, "
            "parent_session, parent_call, started, config, next_rid, data, lease_until) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "title = excluded.title, workspace = excluded.workspace, source = excluded.source, "
            "source_path = excluded.source_path, source_ref = excluded.source_ref, "
            "parent_session = excluded.parent_session, parent_call = excluded.parent_call, "
            "started = min(sessions.started, excluded.started), config = excluded.config, "
            "next_rid = max(sessions.next_rid, excluded.next_rid), "
            "data = json_patch(sessions.data, excluded.data), "
            "lease_until = excluded.lease_until WHERE sessions.source = ?",
            (
                session_id, title, workspace, source, source_path, source_ref,
                parent_session, parent_call, started if started is not None else time.time(),
                config, next_rid, data, lease, proxy_records.SOURCE,
            ),
        )  # fmt: skip
        if cur.rowcount == 0:
            raise sqlite3.IntegrityError(f"UNIQUE constraint failed: sessions.id ({session_id})")
        self._lease_value = max(self._lease_value, lease)
        self._lease(session_id)

    async def update_session(self, session_id: str, **fields: Any) -> None:
        allowed = {"title", "workspace", "started", "ended", "data", "source_path", "source_ref",
                   "parent_session", "parent_call"}  # fmt: skip
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update session fields {sorted(unknown)}")
        sets = ", ".join(f"{name} = ?" for name in fields)
        await self.flush()
        await self._wait_turn()
        await self._lock()
        await self._conn.execute(
            f"UPDATE sessions SET {sets} WHERE id = ?", (*fields.values(), session_id)
        )
        if fields.get("ended", False) is None:  # resumed (ended = None): live again
            self._lease(session_id)
        elif "ended" in fields:
            self._unlease(session_id)
        else:
            self._lease(session_id)

    async def append(
        self,
        session_id: str,
        events: Sequence[Event],
        bodies: Sequence[Body] = (),
        *,
        fts_max_chars: int | None = None,
    ) -> None:
        """Commit one step's events and bodies together, or queue them inside `batch()`.
        `fts_max_chars`: how much of each body the search index takes (the session's config)."""
        pending = Pending(list(events), list(bodies), fts_max_chars)
        self._lease(session_id)
        if self._batch is not None and self._mine():
            self._batch.setdefault(session_id, []).append(pending)
            self._batch_size += len(pending.events)
            if self._batch_size >= self.batch_rows:
                await self.flush()
            return
        await self._wait_turn()
        await self._lock()
        await on_thread(self._conn, _write, session_id, [pending], self.fts_max_chars)

    batch_rows = 2000

    @property
    def batching(self) -> bool:
        """Inside `batch()`: an import of a file that already exists."""
        return self._batch is not None and self._mine()

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Queue appends and commit them in large transactions (an import of an existing file)."""
        if self._batch is not None and self._mine():
            yield
            return
        await self._wait_turn()
        while self._batch is not None:  # another task's batch: one at a time
            await asyncio.sleep(0.01)
        self._batch, self._owner = {}, asyncio.current_task()
        try:
            yield
        finally:
            try:
                await self.flush()
            finally:
                self._batch, self._owner = None, None

    async def flush(self) -> None:
        if not self._batch or not self._mine():
            return  # another task's queue is its own to commit
        await self._wait_turn()
        await self._lock()
        queued, self._batch, self._batch_size = self._batch, {}, 0
        for session_id, pending in queued.items():
            await on_thread(self._conn, _write, session_id, pending, self.fts_max_chars)

    @asynccontextmanager
    async def transaction(
        self, on_lock: Callable[[], Awaitable[None]] | None = None
    ) -> AsyncIterator[None]:
        """Everything written inside (sessions, events, bodies) commits together or not at all:
        an import commits its rows with the offset and parser state that cover them. The write
        lock is taken at the first write, not before (reading and parsing hold it from no other
        writer), and `on_lock` runs as soon as it is held: there the caller checks that what it
        read is still so, or raises to roll back."""
        await self.flush()
        await self._wait_turn()
        self._tx = [False, on_lock]
        self._no_tx.clear()
        if self._owner is None:
            self._owner = asyncio.current_task()
        try:
            yield
            await self.flush()
            if self._tx[0]:
                await self._conn.execute("COMMIT")
        except BaseException:
            if self._batch is not None:  # queued rows of the transaction: gone with it
                self._batch, self._batch_size = {}, 0
            if self._conn.in_transaction:
                await self._conn.execute("ROLLBACK")
            raise
        finally:
            self._tx = None
            self._no_tx.set()
            if self._batch is None:
                self._owner = None

    def _mine(self) -> bool:
        return self._owner is None or asyncio.current_task() is self._owner

    async def _wait_turn(self) -> None:
        """A write from another task than the one in a transaction waits for it to end."""
        while self._tx is not None and not self._mine():
            await self._no_tx.wait()

    async def _lock(self) -> None:
        """Inside `transaction`, before its first write: BEGIN IMMEDIATE, then its check."""
        tx = self._tx
        if tx is not None and not tx[0]:
            tx[0] = True
            await self._conn.execute("BEGIN IMMEDIATE")
            if tx[1] is not None:
                await tx[1]()

    async def last_seq(self, session_id: str) -> int:
        """The seq of the session's newest event (0 when it has none)."""
        await self.flush()
        rows = await fetch_all(
            self._conn, "SELECT coalesce(max(seq), 0) FROM events WHERE session = ?", (session_id,)
        )
        return int(rows[0][0])

    async def delete_message(self, session_id: str, seq: int) -> None:
        """Take back a message event (an importer's provisional one; never a result, whose
        body and search index stay)."""
        await self.flush()
        await self._wait_turn()
        await self._lock()
        await self._conn.execute(
            "DELETE FROM events WHERE session = ? AND seq = ? AND kind = 'message'",
            (session_id, seq),
        )

    async def rename_session(self, old: str, new: str) -> None:
        """Give a session another id, its events, bodies and request records (the import's and
        the proxy's) with it (an importer's session made before its file said whose it is). The
        search index is keyed by body rowid: unchanged."""
        await self.flush()
        await self._wait_turn()
        await self._lock()
        for sql in ("UPDATE sessions SET id = ?1 WHERE id = ?2",
                    "UPDATE events SET session = ?1 WHERE session = ?2",
                    "UPDATE bodies SET session = ?1 WHERE session = ?2",
                    "UPDATE sessions SET parent_session = ?1 WHERE parent_session = ?2",
                    "UPDATE api_requests SET session = ?1 WHERE session = ?2",
                    "UPDATE api_costs SET session = ?1 WHERE session = ?2",
                    "UPDATE proxy_records SET session = ?1 WHERE session = ?2"):  # fmt: skip
            await self._conn.execute(sql, (new, old))

    async def write_requests(self, session_id: str, records: requests.RequestRecords) -> None:
        """The request-record rows one transcript record adds (store/requests.py), in turn with
        the events: inside the import's transaction when there is one."""
        if not records:
            return
        await self.in_turn(requests.write, session_id, records)

    async def in_turn(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(connection, *args)` on the writer's connection, in turn with the events (inside
        the import's transaction when there is one): for the store's own modules that keep
        other tables (requests.py, proxy_records.py)."""
        await self.flush()
        await self._wait_turn()
        await self._lock()
        return await on_thread(self._conn, fn, *args)

    async def checkpoint(self) -> None:
        await self.flush()
        await self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    # What the engine itself reads back: recall's stored text, and a session to resume.

    async def stored_data(self, session_id: str, rid: int) -> str | bytes | None:
        """A result's stored text as kept: a str, or for a body written in pieces its UTF-8
        bytes (half the memory of the text it decodes to; recall decodes only a window)."""
        await self.flush()
        return await on_thread(self._conn, _stored_data, session_id, rid)

    async def tree_stored_data(self, session_id: str, rid: int) -> str | bytes | None:
        """`stored_data` of result `rid` in the session's tree (`store/tree.py`): the session's
        own, else the sub-agent's or parent's that holds it."""
        await self.flush()

        def _find(conn: sqlite3.Connection) -> str | bytes | None:
            # No event holds it: a body stored without one (the proxy's elided texts).
            sid = tree.holder(conn, session_id, rid) or session_id
            return _stored_data(conn, sid, rid)

        return await on_thread(self._conn, _find)

    async def id_space(self, session_id: str) -> IdSpace:
        """The id counter of the tree `session_id` belongs to (itself, or as a sub-agent its
        parent's tree), shared by every Session of that tree on this writer and advanced to the
        tree's stored next id: past every id another process gave in the tree."""

        def _look(conn: sqlite3.Connection) -> tuple[str, int]:
            root = tree.root_of(conn, session_id)
            return root, tree.next_rid(conn, root)

        root, stored = await on_thread(self._conn, _look)
        space = self._id_spaces.get(root)
        if space is None:
            space = self._id_spaces[root] = IdSpace(root, stored)
        space.advance(stored)
        return space

    async def stored_text(self, session_id: str, rid: int) -> str | None:
        await self.flush()
        rows = await fetch_all(
            self._conn,
            "SELECT CAST(stored AS TEXT) FROM bodies WHERE session = ? AND rid = ?",
            (session_id, rid),
        )
        return rows[0][0] if rows else None

    async def session_info(self, session_id: str) -> dict[str, Any] | None:
        """A session's own fields (no events), or None when there is no such session: an
        importer asks whether a source was imported before and where it stopped. No flush:
        session rows are never queued, and the connection's thread keeps statements in order."""
        # The proxy's row for a session no engine has opened is none yet (`create_session`).
        rows = await fetch_all(
            self._conn,
            "SELECT title, workspace, source, source_path, source_ref, parent_session, "
            "parent_call, started, ended, data FROM sessions WHERE id = ? AND source != ?",
            (session_id, proxy_records.SOURCE),
        )
        if not rows:
            return None
        names = ("title", "workspace", "source", "source_path", "source_ref", "parent_session",
                 "parent_call", "started", "ended", "data")  # fmt: skip
        return dict(zip(names, rows[0], strict=True))

    async def session_state(self, session_id: str) -> dict[str, Any]:
        await self.flush()
        rows = await fetch_all(
            self._conn,
            "SELECT workspace, config, next_rid FROM sessions WHERE id = ?",
            (session_id,),
        )
        if not rows:
            raise StoreError(f"There is no session {session_id} in the store.")
        workspace, config, next_rid = rows[0]
        events = await fetch_all(
            self._conn,
            f"SELECT session, seq, {', '.join(EVENT_COLUMNS)} FROM events "
            "WHERE session = ? AND kind IN ('result', 'compaction') ORDER BY seq",
            (session_id,),
        )
        return {
            "workspace": workspace,
            "config": config,
            "next_rid": next_rid,
            "events": [Event.from_row(r[0], r[1], r[2:]) for r in events],
        }

    # What the agents and the importers beside them ask of the writer's own connection (the hook
    # engine; an import of a hooked session, which reads what a hook or the MCP server stored).

    async def set_busy_timeout(self, ms: int) -> None:
        """How long this writer waits for another's lock (the hook engine must give up inside
        Claude Code's budget, well before the default)."""
        await self._conn.execute(f"PRAGMA busy_timeout = {int(ms)}")

    async def set_event_text(self, session_id: str, seq: int, text: str) -> None:
        """The text of an event already stored (a compaction stored before its summary was
        written: the hook engine fills it in when it comes)."""
        await self.flush()
        await self._wait_turn()
        await self._lock()
        await self._conn.execute(
            "UPDATE events SET text = ? WHERE session = ? AND seq = ?", (text, session_id, seq)
        )

    async def tree_call_refs(self, session_id: str) -> set[str]:
        """The `call_ref`s of the results stored in the session's tree, in one hop (no flush:
        an importer asks what a hook or the MCP server, other writers, stored)."""

        def _query(conn: sqlite3.Connection) -> set[str]:
            out: set[str] = set()
            for sid in tree.members(conn, tree.root_of(conn, session_id)):
                rows = conn.execute(
                    "SELECT call_ref FROM events WHERE session = ? AND kind = 'result' "
                    "AND call_ref IS NOT NULL", (sid,)
                ).fetchall()  # fmt: skip
                out.update(r[0] for r in rows)
            return out

        return await on_thread(self._conn, _query)

    async def tree_root(self, session_id: str) -> str:
        """The session at the top of `session_id`'s tree (`tree.root_of`)."""
        return await on_thread(self._conn, tree.root_of, session_id)

    async def tree_next_rid(self, session_id: str) -> int:
        """The next id of the session's tree as stored (no flush: what other writers took)."""

        def _query(conn: sqlite3.Connection) -> int:
            return tree.next_rid(conn, tree.root_of(conn, session_id))

        return await on_thread(self._conn, _query)
