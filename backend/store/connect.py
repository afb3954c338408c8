"""Opening the store: the same pragmas and schema check for the writer and the reader."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from . import schema
from .paths import prepare
from .schema import StoreError

BUSY_TIMEOUT_MS = 10_000

T = TypeVar("T")


async def on_thread(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(sqlite3_connection, *args)` on the connection's own thread in one hop.

    The cost of aiosqlite is per await (100-300 µs), not per statement; a whole transaction as
    one hop is what keeps an insert under 2 ms. aiosqlite has no public call for this, so this
    is the one place that reaches into it (the version is pinned in pyproject.toml).
    """
    return await conn._execute(fn, conn._conn, *args)


async def open_connection(path: Path, *, create: bool) -> aiosqlite.Connection:
    path = Path(path)
    if create:
        prepare(path)
    elif not path.exists():
        raise StoreError(
            f"There is no store at {path}; `ctxview demo` or `ctxview import PATH` makes one."
        )
    conn = aiosqlite.connect(path, isolation_level=None)
    try:
        await conn
    except sqlite3.Error as exc:
        # aiosqlite stops its thread without waiting; if the loop closed first (a CLI exiting
        # with this error), the thread would print a traceback about the closed loop.
        conn._thread.join(timeout=5)
        raise StoreError(f"The store at {path} cannot be opened: {exc}.") from None
    try:
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Look before setting WAL mode: a file that is not ours is left exactly as it was.
        await on_thread(conn, schema.check)
        await conn.executescript(schema.PRAGMAS)
        await on_thread(conn, schema.ensure)
    except sqlite3.DatabaseError as exc:
        await conn.close()
        raise StoreError(_refusal(path, exc)) from None
    except BaseException:
        await conn.close()
        raise
    return conn


def _refusal(path: Path, exc: sqlite3.DatabaseError) -> str:
    """SQLite's error as one sentence about the store."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_NOTADB":
        return f"{path} is not an SQLite database, so it is not a ctxview store."
    if name == "SQLITE_CORRUPT":
        return f"The store at {path} is damaged ({exc}); it cannot be opened."
    return f"The store at {path} cannot be opened: {exc}."
