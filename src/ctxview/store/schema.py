"""The store's schema, its version, and the migrations that bring an older store forward."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 7
APPLICATION_ID = 0x63747876  # "ctxv": marks a SQLite file as a ctxview store


class StoreError(Exception):
    """The store cannot be used; the message is one sentence for the person at the terminal."""


PRAGMAS = """
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA foreign_keys = OFF;
PRAGMA journal_size_limit = 67108864;
"""

# Version 1. Events are the session's timeline; a result's facts are columns of its event so the
# viewer never parses text; bodies (what the model saw, and the full stored text) are apart so
# that listing a transcript never loads them.
SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id             TEXT PRIMARY KEY,
    title          TEXT NOT NULL DEFAULT '',
    workspace      TEXT NOT NULL DEFAULT '',
    source         TEXT NOT NULL DEFAULT 'live',   -- live | demo | claude-code | codex
    source_path    TEXT,
    source_ref     TEXT,                           -- the source's own session id
    parent_session TEXT,                           -- a sub-agent's parent session
    parent_call    TEXT,                           -- the tool call that started it
    started        REAL NOT NULL,
    ended          REAL,
    config         TEXT NOT NULL DEFAULT '{}',     -- dotted-key overrides
    next_rid       INTEGER NOT NULL,               -- ids are never given twice
    data           TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS events (
    session      TEXT NOT NULL,
    seq          INTEGER NOT NULL,                 -- grows by one per event of the session
    ts           REAL NOT NULL,
    kind         TEXT NOT NULL,                    -- message | call | result | compaction | end
    role         TEXT,                             -- message: user | assistant | system
    tool         TEXT,                             -- call, result
    call_ref     TEXT,                             -- pairs a call with its result
    args         TEXT,                             -- call: JSON
    text         TEXT,                             -- message text; compaction: the summary
    rid          INTEGER,                          -- result: its id
    rkind        TEXT,                             -- full | unchanged | same | recall | error | edit | created | deleted | patch
    points_to    INTEGER,                          -- stub: the full result; recall: the recalled id
    capped       INTEGER NOT NULL DEFAULT 0,
    elided_lines INTEGER,
    path         TEXT,                             -- read / edit: the path as the call gave it
    line_from    INTEGER,
    line_to      INTEGER,
    line_total   INTEGER,
    sha          TEXT,                             -- full SHA-256 of the file's content
    shown_chars  INTEGER,                          -- what the model was given
    shown_lines  INTEGER,
    stored_chars INTEGER,                          -- the full stored text
    stored_lines INTEGER,
    seen_chars   INTEGER,                          -- import: what the agent really got
    data         TEXT,                             -- JSON extras (usage, table rows, +/- counts)
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;

CREATE UNIQUE INDEX IF NOT EXISTS events_rid ON events (session, rid) WHERE rid IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_points_to ON events (session, points_to)
    WHERE points_to IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_path ON events (session, path) WHERE path IS NOT NULL;

CREATE TABLE IF NOT EXISTS bodies (
    session TEXT NOT NULL,
    rid     INTEGER NOT NULL,
    shown   TEXT NOT NULL,                         -- exactly what the model was given
    stored  TEXT NOT NULL,                         -- in full, before any cap; a stub's: what it stands for
    UNIQUE (session, rid)
);

-- Full-text search over stored results; contentless (bodies are never deleted), its rowid is
-- the body's rowid. SQLite 3.40 has no contentless_delete.
CREATE VIRTUAL TABLE IF NOT EXISTS bodies_fts USING fts5 (stored, content = '');
"""


def fts_trigger(max_chars: int) -> str:
    """Version 1 indexed bodies by trigger; version 2 drops it (see `_to_v2`). Kept so a test can
    build a real version-1 store."""
    return f"""
CREATE TRIGGER IF NOT EXISTS bodies_fts_insert AFTER INSERT ON bodies BEGIN
    INSERT INTO bodies_fts (rowid, stored) VALUES (new.rowid, substr(new.stored, 1, {int(max_chars)}));
END;
"""


# Keeps the id counter with the session in the same transaction as the result that used the id,
# so an id is never given twice, not after a crash.
RID_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS events_next_rid AFTER INSERT ON events
WHEN new.rid IS NOT NULL BEGIN
    UPDATE sessions SET next_rid = max(next_rid, new.rid + 1) WHERE id = new.session;
END;
"""


def _to_v2(conn: sqlite3.Connection) -> None:
    # The writer now feeds the full-text index itself: the trigger made SQLite hold one more
    # whole copy of a body (the NEW row), 200 MB more for a 200 MB output. Since version 2 a
    # body over `writer.BIG_CHARS` is written in pieces, so its `stored` is a BLOB of UTF-8:
    # read it as CAST(stored AS TEXT) (a version-1 ctxview refuses this store, so never sees one).
    conn.execute("DROP TRIGGER IF EXISTS bodies_fts_insert")
    # A session's events of one kind in order: the viewer's stepping from message to message or
    # compaction to compaction, and counting them, without a scan of the whole session.
    conn.execute("CREATE INDEX IF NOT EXISTS events_kind ON events (session, kind)")
    # Sub-agents under their parent, and the sessions list newest first.
    conn.execute(
        "CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_session) "
        "WHERE parent_session IS NOT NULL"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS sessions_started ON sessions (started)")


# Version 3: messages, calls (tool and arguments), thinking and compaction summaries are
# searchable too, in their own contentless index (no copy of the text). Its rowid names the
# event: the session's rowid times 2**32 plus the event's seq. A trigger feeds it, as these rows
# are small (a body, which can be 200 MB, is fed by the writer; see `_to_v2`).
EVENT_ROWID = 4294967296
EVENT_FTS_MAX = 1_000_000  # characters of one event indexed
_EVENT_FTS_TEXT = f"""substr(
    CASE {{e}}.kind WHEN 'call' THEN coalesce({{e}}.tool, '') || ' ' || coalesce({{e}}.args, '')
    ELSE coalesce({{e}}.text, '') END
    || CASE WHEN {{e}}.data IS NOT NULL AND json_valid({{e}}.data)
       THEN ' ' || coalesce(json_extract({{e}}.data, '$.thinking'), '') ELSE '' END,
    1, {EVENT_FTS_MAX})"""
EVENT_FTS_KINDS = "('message', 'call', 'compaction')"


def _to_v3(conn: sqlite3.Connection) -> None:
    made = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events_fts'"
    ).fetchone()
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5 (text, content = '')")
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS events_fts_insert AFTER INSERT ON events "
        f"WHEN new.kind IN {EVENT_FTS_KINDS} BEGIN "
        "INSERT INTO events_fts (rowid, text) VALUES ("
        f"(SELECT rowid FROM sessions WHERE id = new.session) * {EVENT_ROWID} + new.seq, "
        f"{_EVENT_FTS_TEXT.format(e='new')}); END"
    )
    if made:
        return
    # The events already stored (an older store), once.
    conn.execute(
        f"INSERT INTO events_fts (rowid, text) SELECT s.rowid * {EVENT_ROWID} + e.seq, "
        f"{_EVENT_FTS_TEXT.format(e='e')} FROM events e JOIN sessions s ON s.id = e.session "
        f"WHERE e.kind IN {EVENT_FTS_KINDS}"
    )


# Version 4: a session is live while a writer holds its lease: the writer sets `lease_until`
# (wall-clock seconds) a few seconds ahead and renews it while it is open; closing sets it to the
# moment it left. `ended IS NULL` alone said "live" forever after a writer stopped or died.
def _to_v4(conn: sqlite3.Connection) -> None:
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    if "lease_until" not in columns:
        conn.execute("ALTER TABLE sessions ADD COLUMN lease_until REAL")


# Version 5: the API requests a Claude Code transcript records (store/requests.py writes and
# reads them; context/requests.py rebuilds the requests).
# A shape (system + tools) and a message are stored once under their hash, shared by every
# request and session that sends them; a request is its keep/tail delta and its own fields.
API_TABLES = """
CREATE TABLE IF NOT EXISTS api_shapes (
    hash  TEXT PRIMARY KEY,
    shape TEXT NOT NULL                            -- {"system": [...], "tools": [...]}
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_blobs (
    hash    TEXT PRIMARY KEY,
    message TEXT NOT NULL                          -- canonical: no cache_control, block lists
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_requests (
    session       TEXT NOT NULL,
    n             INTEGER NOT NULL,                -- the request's place in its session
    id            TEXT NOT NULL,
    ts            REAL,
    query_source  TEXT,
    shape_hash    TEXT,
    base          TEXT,                            -- the request whose messages it keeps
    keep          INTEGER NOT NULL,
    tail          TEXT NOT NULL,                   -- JSON list of message hashes
    params        TEXT NOT NULL,                   -- JSON: model, betas, max_tokens, ...
    cache_control TEXT NOT NULL,                   -- JSON: [{path, value}]
    digest        TEXT,                            -- Claude Code's requestDigest
    usage         TEXT,                            -- JSON: the answer's usage
    PRIMARY KEY (session, n)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS api_requests_id ON api_requests (session, id);
CREATE TABLE IF NOT EXISTS api_costs (
    session TEXT PRIMARY KEY,
    cost    TEXT NOT NULL                          -- the last cost-state record, JSON
) WITHOUT ROWID;
"""


def _to_v5(conn: sqlite3.Connection) -> None:
    _run_script(conn, API_TABLES)


# Version 6: what `ctxview proxy` saw of each request (store/proxy_records.py); a request the
# model answers is also an api_requests row (its messages and shape shared with the import's).
def _to_v6(conn: sqlite3.Connection) -> None:
    from ctxview.store.proxy_records import TABLES

    _run_script(conn, TABLES)


# Version 7: the request tables a push carries (api_requests, api_costs, proxy_records) stamp each
# row with `rev`, from one counter of the store, whenever it is written or changed (an import's
# usage comes after its request; INSERT OR REPLACE, a rename): a push sends a session's rows past
# the `rev` it last sent, and nothing else. Triggers, so that every way of writing them counts.
REV_TABLES: dict[str, tuple[str, ...]] = {
    "api_requests": ("session", "n"),
    "api_costs": ("session",),
    "proxy_records": ("session", "seq"),
}
REV_COUNTER = """
CREATE TABLE IF NOT EXISTS row_revs (
    one INTEGER PRIMARY KEY CHECK (one = 0),
    rev INTEGER NOT NULL                           -- the last rev given
);
INSERT OR IGNORE INTO row_revs (one, rev) VALUES (0, 0);
"""


def _rev_triggers(conn: sqlite3.Connection, table: str, key: tuple[str, ...]) -> None:
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != "rev"]
    where = " AND ".join(f"{k} = new.{k}" for k in key)
    stamp = ("UPDATE row_revs SET rev = rev + 1; "
             f"UPDATE {table} SET rev = (SELECT rev FROM row_revs) WHERE {where}; END")  # fmt: skip
    # The insert trigger's own UPDATE sets `rev` only, so the update trigger (on the other
    # columns) does not fire from it.
    conn.execute(f"CREATE TRIGGER IF NOT EXISTS {table}_rev_insert AFTER INSERT ON {table} "
                 f"BEGIN {stamp}")  # fmt: skip
    conn.execute(f"CREATE TRIGGER IF NOT EXISTS {table}_rev_update AFTER UPDATE OF "
                 f"{', '.join(columns)} ON {table} BEGIN {stamp}")  # fmt: skip


def _to_v7(conn: sqlite3.Connection) -> None:
    _run_script(conn, REV_COUNTER)
    for table, key in REV_TABLES.items():
        if "rev" not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN rev INTEGER")
        # The rows already stored, each its own rev (a push slices by rev), in their order.
        cols = ", ".join(key)
        rows = conn.execute(f"SELECT {cols} FROM {table} WHERE rev IS NULL ORDER BY {cols}")
        (last,) = conn.execute("SELECT rev FROM row_revs").fetchone()
        where = " AND ".join(f"{k} = ?" for k in key)
        for i, found in enumerate(rows.fetchall(), start=last + 1):
            conn.execute(f"UPDATE {table} SET rev = ? WHERE {where}", (i, *found))
            conn.execute("UPDATE row_revs SET rev = ?", (i,))
        conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_rev ON {table} ({key[0]}, rev)")
        _rev_triggers(conn, table, key)


# version -> the step that brings a store of that version to the next one. Steps are idempotent
# and run inside the migration's transaction.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _to_v2,
    2: _to_v3,
    3: _to_v4,
    4: _to_v5,
    5: _to_v6,
    6: _to_v7,
}


def check(conn: sqlite3.Connection) -> int | None:
    """The store's schema version, None for an empty file; refuses a file that is not ours."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables and "meta" not in tables):
        raise StoreError(
            "This file is an SQLite database but not a ctxview store; refusing to touch it."
        )
    if not tables:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise StoreError("The store has no schema version; it was not written by ctxview.")
    try:
        version = int(row[0])
    except ValueError:
        raise StoreError(f"The store's schema version {row[0]!r} is not a number.") from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"The store was written by a newer ctxview (schema {version}; this one reads "
            f"up to {SCHEMA_VERSION}); upgrade ctxview to open it."
        )
    if version < 1:
        raise StoreError(f"The store's schema version {version} is not one ctxview ever wrote.")
    return version


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run each statement of `script` in the open transaction (executescript would commit it)."""
    statement = ""
    for piece in script.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                conn.execute(statement)
            statement = ""


def ensure(conn: sqlite3.Connection) -> None:
    """Create a new store, migrate an older one, refuse a newer or foreign one (one sentence).

    A new store is built as version 1 and brought forward by the same steps as an old one, so
    the two can never differ. The work is done under the write lock after looking again: another
    process may have created or migrated the store in the meantime.
    """
    if check(conn) == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = check(conn)
        if version is None:
            _run_script(conn, SCHEMA_V1 + RID_TRIGGER)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', '1')")
            version = 1
        while version < SCHEMA_VERSION:
            step = MIGRATIONS.get(version)
            if step is None:
                raise StoreError(f"No migration from store schema {version}; it cannot be opened.")
            step(conn)
            version += 1
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
