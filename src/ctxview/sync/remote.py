"""The team store in PostgreSQL: connecting (libpq's URL, environment, .pgpass and TLS settings,
through psycopg 3), its schema and versions, and PostgreSQL's errors as one sentence that never
holds the password.

Driver: psycopg 3's asyncio API. It runs on libpq, so PGHOST/PGUSER/PGPASSWORD, .pgpass,
pg_service.conf and every sslmode/sslrootcert/sslcert setting behave exactly as in psql (asyncpg
re-implements the protocol and reads a subset of them); LISTEN/NOTIFY is `conn.notifies()`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import psycopg
from psycopg import conninfo

from ctxview.store.push_source import SIDE_COLUMNS, SIDE_KEYS
from ctxview.store.records import EVENT_COLUMNS
from ctxview.store.schema import StoreError

# psycopg logs what it ignores while closing a broken connection ("error ignored terminating …");
# with no handler Python prints that on stderr before our one sentence, so it goes nowhere.
logging.getLogger("psycopg").addHandler(logging.NullHandler())
logging.getLogger("psycopg").propagate = False

PG_SCHEMA_VERSION = 2
APPLICATION = "ctxview"
CHANNEL = "ctxview"  # NOTIFY payload: "<machine>\t<session id>", ids only
SEARCH_CHARS = 100_000  # of a body or event indexed (a tsvector is at most 1 MB)

_INT_EVENTS = {"seq", "rid", "points_to", "capped", "elided_lines", "line_from", "line_to",
               "line_total", "shown_chars", "shown_lines", "stored_chars", "stored_lines",
               "seen_chars"}  # fmt: skip


def event_type(name: str) -> str:
    """An event column's PostgreSQL type (push's staging table has the same, nulls allowed)."""
    if name == "ts":
        return "double precision"
    return "bigint" if name in _INT_EVENTS else "text"


# Version 1. Tables are prefixed so the database may be shared with other programs' tables;
# every row carries its machine: (machine, id) is a session, whoever else used the same id.
SCHEMA_V1 = f"""
CREATE TABLE ctxview_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE ctxview_sessions (
    machine text NOT NULL, id text NOT NULL, title text NOT NULL, workspace text NOT NULL,
    source text NOT NULL, source_path text, source_ref text, parent_session text,
    parent_call text, started double precision NOT NULL, ended double precision,
    config text NOT NULL, next_rid bigint NOT NULL, data text NOT NULL,
    lease_until double precision,
    pushed_seq bigint NOT NULL DEFAULT 0,      -- watermark: events up to here are here
    pushed_ts double precision,                -- the ts of that event (a re-used seq is seen)
    pushed_body bigint NOT NULL DEFAULT 0,     -- watermark: the source's body rowid
    epoch integer NOT NULL DEFAULT 0,          -- bumped when events were rewritten in place
    version bigint NOT NULL DEFAULT 0,         -- bumped at every change of the row
    PRIMARY KEY (machine, id)
);
CREATE TABLE ctxview_events (
    machine text NOT NULL, session text NOT NULL,
    {
    ", ".join(
        f"{c} {event_type(c)}" + (" NOT NULL" if c == "ts" else "") for c in ("seq", *EVENT_COLUMNS)
    )
},
    fts tsvector,
    PRIMARY KEY (machine, session, seq)
);
CREATE TABLE ctxview_bodies (
    machine text NOT NULL, session text NOT NULL, rid bigint NOT NULL,
    n bigint NOT NULL,                         -- the source's rowid: pull's order
    shown bytea NOT NULL, stored bytea NOT NULL, -- UTF-8; bytea keeps a NUL character
    fts tsvector,
    PRIMARY KEY (machine, session, rid)
);
CREATE INDEX ctxview_bodies_n ON ctxview_bodies (machine, session, n);
CREATE INDEX ctxview_events_fts ON ctxview_events USING gin (fts);
CREATE INDEX ctxview_bodies_fts ON ctxview_bodies USING gin (fts);
INSERT INTO ctxview_meta VALUES ('application', '{APPLICATION}'), ('schema_version', '1');
"""

_SIDE_TYPES = {"n": "bigint", "ts": "double precision", "keep": "bigint", "seq": "bigint",
               "api_n": "bigint", "started": "double precision", "first_byte_ms": "double precision",
               "total_ms": "double precision", "status": "bigint", "body_bytes": "bigint",
               "parsed": "bigint", "body_raw": "bytea", "answer_raw": "bytea"}  # fmt: skip
_SIDE_NOT_NULL = {"id", "keep", "tail", "params", "cache_control", "cost", "request_id",
                  "protocol", "method", "path", "upstream", "started", "outcome",
                  "request_headers", "body_bytes", "body_sha256", "parsed"}  # fmt: skip


def side_type(name: str) -> str:
    """A request-record column's PostgreSQL type (the rest are text)."""
    return _SIDE_TYPES.get(name, "text")


def _side_table(table: str) -> str:
    cols = ",\n    ".join(f"{c} {side_type(c)}" + (" NOT NULL" if c in _SIDE_NOT_NULL else "")
                          for c in SIDE_COLUMNS[table])  # fmt: skip
    key = ", ".join(("machine", "session", *SIDE_KEYS[table]))
    return (
        f"CREATE TABLE ctxview_{table} (\n    machine text NOT NULL, session text NOT NULL,"
        f"\n    {cols},\n    rev bigint NOT NULL,\n    PRIMARY KEY ({key})\n);\n"
        f"CREATE INDEX ctxview_{table}_rev ON ctxview_{table} (machine, session, rev);\n"
    )


# Version 2: a session's request records (Claude Code's own, imported, and what `ctxview proxy`
# saw), as the store keeps them; the shapes and messages they name once by hash, for every
# machine (a hash names its content). `rev` is the team's: given at each insert or change, so
# a pull takes a session's rows past the last rev it took. `pushed_side`: the push's watermark,
# {table: the store's own rev last sent}.
SCHEMA_V2 = (
    "ALTER TABLE ctxview_sessions ADD COLUMN pushed_side text NOT NULL DEFAULT '{}';\n"
    "CREATE SEQUENCE ctxview_side_rev;\n"
    "CREATE TABLE ctxview_api_shapes (hash text PRIMARY KEY, shape text NOT NULL);\n"
    "CREATE TABLE ctxview_api_blobs (hash text PRIMARY KEY, message text NOT NULL);\n"
    + "".join(_side_table(t) for t in SIDE_COLUMNS)
)

MIGRATIONS: dict[int, str] = {1: SCHEMA_V2}  # version -> SQL bringing it to the next one


class RemoteError(StoreError):
    """PostgreSQL cannot be used; one sentence, no password in it. `transient`: the server may
    come back (unreachable, connection lost), so a --watch retries; else it stops."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


def transient(exc: BaseException) -> bool:
    if isinstance(exc, RemoteError):
        return exc.transient
    low = str(exc).lower()
    return isinstance(exc, psycopg.OperationalError) and not (
        "password" in low or ("database" in low and "does not exist" in low)
    )


def describe(url: str) -> str:
    """user@host:port/db of a URL or conninfo, the password left out (libpq's env fills gaps)."""
    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the PostgreSQL server (the URL could not be read)"
    host = parts.get("host") or "localhost"
    where = f"{host}:{parts['port']}" if parts.get("port") else str(host)
    user = f"{parts['user']}@" if parts.get("user") else ""
    db = f"/{parts['dbname']}" if parts.get("dbname") else ""
    return f"{user}{where}{db}"


def redact(text: str, url: str) -> str:
    """`text` with the URL's password (and any user:password@ form) taken out."""
    try:
        pw = conninfo.conninfo_to_dict(url).get("password")
    except psycopg.ProgrammingError:
        pw = None
    if pw:
        text = text.replace(str(pw), "***")
    return re.sub(r"(://[^:/@\s]*):[^@\s]*@", r"\1:***@", text)


def is_remote(store: str | None) -> bool:
    return bool(store) and str(store).startswith(("postgresql://", "postgres://"))


def sentence(exc: BaseException, url: str, doing: str = "") -> str:
    """PostgreSQL's error as one sentence about the server."""
    where = describe(url)
    said = redact(" ".join(str(exc).split()), url).rstrip(".")
    low = said.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return f"PostgreSQL at {where} refused the password (check the URL, PGPASSWORD or .pgpass)."
    if "does not exist" in low and "database" in low:
        return f"PostgreSQL at {where} has no such database; create it first (createdb)."
    if isinstance(exc, psycopg.OperationalError) and doing:
        return (f"The connection to PostgreSQL at {where} was lost during the {doing} ({said}); "
                f"run it again: it carries on where it stopped.")  # fmt: skip
    if isinstance(exc, psycopg.OperationalError):
        return f"Cannot reach PostgreSQL at {where} ({said})."
    return f"PostgreSQL at {where} failed: {said}."


async def connect(url: str, *, autocommit: bool = False) -> psycopg.AsyncConnection[Any]:
    """A connection with ctxview's schema checked (made or migrated when needed)."""
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        raise RemoteError("The PostgreSQL URL could not be read; it looks like "
                          "postgresql://user@host:5432/dbname.") from None  # fmt: skip
    params.setdefault("connect_timeout", "5")
    params.setdefault("application_name", "ctxview")
    try:
        conn = await psycopg.AsyncConnection.connect(conninfo.make_conninfo("", **params))
    except psycopg.Error as exc:
        raise RemoteError(sentence(exc, url), transient(exc)) from None
    try:
        await ensure(conn, url)
        await conn.set_autocommit(autocommit)
    except BaseException:
        await conn.close()
        raise
    return conn


async def _version(conn: psycopg.AsyncConnection[Any], url: str) -> int | None:
    cur = await conn.execute(
        "SELECT count(*) FILTER (WHERE table_name = 'ctxview_meta'), count(*) "
        "FROM information_schema.tables WHERE table_schema = current_schema()"
    )
    ours, tables = (await cur.fetchone()) or (0, 0)
    where = describe(url)
    if not ours:
        if tables:
            raise RemoteError(f"The database at {where} holds another program's tables and no "
                              "ctxview store; use a database of its own for ctxview.")  # fmt: skip
        return None
    cur = await conn.execute("SELECT key, value FROM ctxview_meta")
    meta = dict(await cur.fetchall())
    if meta.get("application") != APPLICATION or "schema_version" not in meta:
        raise RemoteError(f"The database at {where} has a ctxview_meta table that ctxview did not "
                          "write; refusing to touch it.")  # fmt: skip
    version = int(meta["schema_version"])
    if version > PG_SCHEMA_VERSION:
        raise RemoteError(
            f"The database at {where} was written by a newer ctxview (schema "
            f"{version}; this one knows up to {PG_SCHEMA_VERSION}); upgrade ctxview."
        )
    return version


async def ensure(conn: psycopg.AsyncConnection[Any], url: str) -> None:
    """Create the schema or migrate it, under an advisory lock (two first pushes at once)."""
    if await _version(conn, url) == PG_SCHEMA_VERSION:
        await conn.commit()
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('ctxview-schema'))")
        version = await _version(conn, url)
        if version is None:
            await conn.execute(SCHEMA_V1)
            version = 1
        while version < PG_SCHEMA_VERSION:
            await conn.execute(MIGRATIONS[version])
            version += 1
        await conn.execute(
            "UPDATE ctxview_meta SET value = %s WHERE key = 'schema_version'", (str(version),)
        )
    await conn.commit()


_TRACE = os.environ.get("CTXVIEW_SYNC_TRACE")  # bench/bench_sync.py: where the time goes


def trace(*fields: object) -> None:
    """One line of timestamps per slice, appended to $CTXVIEW_SYNC_TRACE when it is set."""
    if _TRACE:
        with open(_TRACE, "a") as f:
            f.write(" ".join(map(str, fields)) + "\n")


def say(message: str) -> None:
    print(f"ctxview: {message}", file=sys.stderr, flush=True)


def remote_error(exc: BaseException, url: str, doing: str = "") -> RemoteError:
    return exc if isinstance(exc, RemoteError) else RemoteError(sentence(exc, url, doing),
                                                                transient(exc))  # fmt: skip


async def retry_after(exc: BaseException, url: str, delay: float,
                      close: Callable[[], Awaitable[None]]) -> float:  # fmt: skip
    """A --watch meeting a failure: stop when waiting cannot help (a wrong password, a newer
    schema); else say so, close the connection, wait `delay`. The next delay (backoff)."""
    error = remote_error(exc, url)
    if not error.transient:
        raise error from None
    say(f"{error} Retrying in {delay:g} s.")
    await close()
    await asyncio.sleep(delay)
    return min(delay * 2, 5.0)


class Syncer(Protocol):
    url: str

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def first(self) -> None: ...  # one pass over every chosen session

    async def watch(self, away: bool) -> None: ...  # away: the server was down at the start

    def summary(self) -> str: ...

    def close_local(self) -> None: ...


async def run(syncer: Syncer, doing: str, *, watch: bool, quiet: bool) -> int:
    """push and pull: a first pass, its summary, then follow with --watch. The server away at
    the start ends the command in one sentence; a --watch waits for it as for a restart."""
    try:
        try:
            await syncer.open()
            await syncer.first()
        except (psycopg.Error, RemoteError) as exc:
            error = remote_error(exc, syncer.url, doing)
            if not (watch and error.transient):
                raise error from None
            say(f"{error} Retrying.")
            await syncer.close()
            await syncer.watch(True)
        if not quiet:
            print(syncer.summary(), flush=True)
        if watch:
            await syncer.watch(False)
    finally:
        await syncer.close()
        syncer.close_local()
    return 0
