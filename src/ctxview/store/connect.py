"""Opening the store: the writer's read-write connection and the reader's read-only one, the same
schema check and a bounded integrity check for both, and SQLite's errors as one sentence."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

import aiosqlite

from ctxview.store import schema
from ctxview.store.fresh import make_if_missing
from ctxview.store.paths import tighten
from ctxview.store.schema import StoreError

# How long a connection waits for another one's write lock. The environment variable is for
# tests and for slow network disks.
BUSY_TIMEOUT_MS = int(os.environ.get("CTXVIEW_BUSY_TIMEOUT_MS", "10000"))

# SQLite's quick_check on open. It walks every page of every b-tree: 0.1 s per 200 MB here when
# the machine is quiet, 2.8-3 s for the viewer bench's 865 MB store when it is busy. A store up
# to FULL_CHECK_BYTES is checked in full, whatever the load (a busy machine must not skip it);
# a larger one as far as QUICK_CHECK_SECONDS goes, which keeps the viewer's first screen within
# its 1.5 s (bench/bench_viewer.py: 100,000 results; Reader.open 0.26 s there).
FULL_CHECK_BYTES = 64 << 20
QUICK_CHECK_SECONDS = 0.25

T = TypeVar("T")

# What a command catches past the open (a full disk, a busy store) without importing sqlite3:
# `sentence` says it.
DatabaseError = sqlite3.DatabaseError


async def on_thread(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(sqlite3_connection, *args)` on the connection's own thread in one hop.

    The cost of aiosqlite is per await (100-300 µs), not per statement; a whole transaction as
    one hop is what keeps an insert under 2 ms. aiosqlite has no public call for this, so this
    is the one place that reaches into it (the version is pinned in pyproject.toml).
    """
    ran = await conn._execute(fn, conn._conn, *args)  # type: ignore[no-untyped-call]  # private, unhinted
    return cast(T, ran)


async def fetch_all(
    conn: aiosqlite.Connection, sql: str, params: Iterable[Any] = ()
) -> list[tuple[Any, ...]]:
    """`conn.execute_fetchall` as it is: aiosqlite hints an Iterable of Rows, but it returns the
    list sqlite3's fetchall makes, of plain tuples (no store connection sets a row_factory)."""
    return cast("list[tuple[Any, ...]]", await conn.execute_fetchall(sql, params))


# SQLite's WAL-reset bug (https://sqlite.org/wal.html#walresetbug): a rare race in which a
# checkpoint misses frames when another connection resets the WAL as it starts, losing
# committed pages. The store is written by several connections at once by design (the hook
# engine's writer and its id reserver, the MCP server, an import, the proxy), so `doctor`
# says when the SQLite Python links has it. Fixed in 3.51.3 and in the 3.50.7 and 3.44.6
# backports.
WAL_RESET_FIXED = ((3, 51, 3), (3, 50, 7), (3, 44, 6))


def wal_reset_risk(version: tuple[int, int, int] = sqlite3.sqlite_version_info) -> str | None:
    """A sentence when the linked SQLite has the WAL-reset bug, else None."""
    if version >= WAL_RESET_FIXED[0]:
        return None
    if any(version[:2] == fixed[:2] and version >= fixed for fixed in WAL_RESET_FIXED[1:]):
        return None
    shown = ".".join(map(str, version))
    return (f"SQLite {shown} has the WAL-reset bug (sqlite.org/wal.html#walresetbug): rarely, "
            "a store written by several connections at once loses pages; 3.51.3 fixes it")  # fmt: skip


def sqlite_library() -> str:
    """The SQLite library file this Python runs: the shared one its sqlite3 module loaded (what
    a person upgrades), else the module itself (SQLite built into it)."""
    module = importlib.import_module("_sqlite3")
    with (
        contextlib.suppress(OSError),
        open("/proc/self/maps", encoding="utf-8", errors="replace") as maps,
    ):
        for line in maps:
            if "libsqlite3" in line:
                return line.split(None, 5)[-1].strip()
    return str(getattr(module, "__file__", "sqlite3"))


def identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when there is none: what tells a store from
    the one that replaced it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def sidecars(path: Path) -> tuple[bool, bool]:
    """Whether the store's -wal and -shm files exist."""
    return (Path(f"{path}-wal").exists(), Path(f"{path}-shm").exists())


async def open_connection(path: Path, *, create: bool) -> aiosqlite.Connection:
    """The writer's connection (`create`: read-write, the store made if missing, migrated) or the
    reader's (read-only: it never makes a store, never turns a file into one, never writes its
    data; an older ctxview store is only migrated, on a connection of its own)."""
    path = Path(path)
    if create:
        _before_writing(path)
        target, uri = str(path), False
    else:
        _before_reading(path)
        target, uri = _read_only_uri(path), True
    conn = aiosqlite.connect(target, isolation_level=None, uri=uri)
    # Its worker thread would keep the process alive after the loop ended if the connection
    # were never closed (a task cancelled while opening, a ^C): a daemon thread cannot. A
    # commit is SQLite's to make atomic, so nothing committed depends on the thread's end.
    conn._thread.daemon = True
    try:
        await conn
    except sqlite3.Error as exc:
        # aiosqlite stops its thread without waiting; if the loop closed first (a CLI exiting
        # with this error), the thread would print a traceback about the closed loop.
        conn._thread.join(timeout=5)
        raise StoreError(sentence(exc, path, opening=True)) from None
    except BaseException:  # cancelled while connecting: the connection is closed, not left
        with contextlib.suppress(Exception):
            await asyncio.shield(conn.close())
        raise
    try:
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Look before setting WAL mode: a file that is not ours is left exactly as it was.
        version = await on_thread(conn, schema.check)
        if not create and version is None:
            raise StoreError(f"{path} is an empty SQLite database, not a ctxview store yet.")
        size = os.path.getsize(path)
        budget = None if size <= FULL_CHECK_BYTES else QUICK_CHECK_SECONDS
        problem = await on_thread(conn, quick_check, budget)
        if problem is not None:
            raise StoreError(
                f"The store at {path} is damaged (SQLite's check found: {problem}); "
                f"it cannot be opened."
            )
        if create:
            tighten(path)
            await conn.executescript(schema.PRAGMAS)
            await on_thread(conn, schema.ensure)
        elif version is not None and version < schema.SCHEMA_VERSION and os.access(path, os.W_OK):
            # An older ctxview store is brought forward once, as a writer would (the reader's
            # queries use the newest schema); the reader's own connection stays read-only. A
            # store nobody may write is read as it is.
            await asyncio.to_thread(_migrate, path)
    except sqlite3.DatabaseError as exc:
        await conn.close()
        raise StoreError(sentence(exc, path, opening=True)) from None
    except BaseException:
        await conn.close()
        raise
    return conn


def _migrate(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        schema.check(conn)
        conn.executescript(schema.PRAGMAS)
        schema.ensure(conn)
    finally:
        conn.close()


def _before_writing(path: Path) -> None:
    try:
        make_if_missing(path)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise StoreError(f"The store at {path} cannot be created: {reason}.") from None
    if not os.access(path, os.W_OK):
        raise StoreError(f"The store at {path} is read-only, so ctxview cannot write to it.")


def _before_reading(path: Path) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StoreError(
            f"There is no store at {path}; `ctxview demo` or `ctxview import PATH` makes one."
        ) from None
    except OSError as exc:
        raise StoreError(f"The store at {path} cannot be read: {exc.strerror}.") from None
    if os.path.isdir(path):
        raise StoreError(f"{path} is a folder, not a ctxview store.")
    if st.st_size == 0:
        # An empty file is what SQLite would make a new database of: a read never does.
        raise StoreError(f"{path} is an empty file, not a ctxview store; it is left as it is.")


def _read_only_uri(path: Path) -> str:
    """mode=ro: SQLite never writes the database. A file nobody may write (no -wal holding
    commits) is opened immutable, which needs no -wal or -shm at all: a read-only connection to
    a WAL database would otherwise make both and could not remove them."""
    uri = "file:" + quote(str(path.absolute())) + "?mode=ro"
    wal = Path(f"{path}-wal")
    if not os.access(path, os.W_OK) and not (wal.exists() and wal.stat().st_size > 0):
        uri += "&immutable=1"
    return uri


def tidy_after_read(path: Path, before: tuple[bool, bool], opened: tuple[int, int] | None) -> None:
    """After a read-only connection closed: remove the -wal and -shm it made, as a read-write
    connection does when it is the last one to close. SQLite decides, under its own lock, whether
    another connection still uses them; nothing is done when they were there before the read, or
    when the file at `path` is no longer the one that was read."""
    if all(before) or identity(path) != opened or not os.access(path, os.W_OK):
        return
    if sidecars(path) == before:
        return
    try:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {min(BUSY_TIMEOUT_MS, 1000)}")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # in use or gone: leaving the files is what SQLite itself would do


def quick_check(conn: sqlite3.Connection, budget: float | None) -> str | None:
    """The first problem `PRAGMA quick_check` finds, or None (none found, or the budget, when
    there is one, ran out).

    SQLite's progress handler is not called inside the b-tree walk, so the budget is enforced by
    interrupting the connection from a watchdog thread; the lock keeps a late interrupt from
    reaching whatever statement comes next."""
    lock = threading.Lock()
    finished = threading.Event()

    def stop() -> None:
        # Again every 50 ms: an interrupt that comes before the statement starts is lost.
        if finished.wait(budget or 0):
            return
        while True:
            with lock:
                if finished.is_set():
                    return
                conn.interrupt()
            if finished.wait(0.05):
                return

    if budget is not None:
        threading.Thread(target=stop, name="ctxview-quick-check", daemon=True).start()
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT:
            return None
        raise
    finally:
        with lock:
            finished.set()
    # A row may start with a "*** in database main ***" line before the problem itself.
    lines = [ln for r in rows for ln in str(r[0]).splitlines() if not ln.startswith("*** in ")]
    if not lines or lines[0] == "ok":
        return None
    first = " ".join(lines[0].split())[:160]
    return first.replace(". ", "; ").rstrip(".")


def sentence(exc: sqlite3.Error, path: Path | None, *, opening: bool = False) -> str:
    """SQLite's error as one sentence about the store: what happened (the disk is full, the
    store is read-only, busy, damaged), not only SQLite's words."""
    store = f"the store at {path}" if path is not None else "the store"
    store_ = store[0].upper() + store[1:]
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    said = str(exc).rstrip(".")
    if primary == sqlite3.SQLITE_FULL:
        return f"The disk is full, so {store} cannot be written; free some space and try again."
    if primary == sqlite3.SQLITE_READONLY:
        return f"{store_} is read-only, so ctxview cannot write to it ({said})."
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        seconds = f"{BUSY_TIMEOUT_MS / 1000:g}"
        return (
            f"{store_} is busy: another process kept it locked for more than {seconds} s; "
            f"try again when that process is done."
        )
    if primary == sqlite3.SQLITE_CANTOPEN:
        return (
            f"{store_} cannot be opened ({said}); check that the file and its folder exist "
            f"and may be read."
        )
    if primary == sqlite3.SQLITE_NOTADB:
        where = path if path is not None else "The store's file"
        return f"{where} is not an SQLite database, so it is not a ctxview store."
    if primary == sqlite3.SQLITE_CORRUPT:
        return f"{store_} is damaged ({said})" + ("; it cannot be opened." if opening else ".")
    if primary == sqlite3.SQLITE_IOERR:
        return f"The disk failed while {store} was read or written ({said})."
    if primary in (sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
        return f"The system did not permit access to {store} ({said})."
    if primary == sqlite3.SQLITE_NOMEM:
        return f"There was not enough memory to use {store}."
    return f"{store_} cannot be {'opened' if opening else 'used'}: {said}."
