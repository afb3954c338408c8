"""Synchronous looks at the store for the agents' hot paths (a hook's step, an MCP call), where
an await on the writer's thread would cost more than the query: a plain sqlite3 connection the
caller keeps open (`Probe`), with named reads; and the one-shot lookups of a process that holds
no connection (which session is live, whether a call's result is stored)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from ctxview.store import tree
from ctxview.store.records import EVENT_COLUMNS, Event

# What a store call raises besides StoreError (SQLite's own error): callers catch it by this
# name, so only the store imports sqlite3.
SqliteError = sqlite3.Error

_LIVE_SQL = """
SELECT s.id FROM sessions s
WHERE s.source = ? AND s.workspace = ? AND s.ended IS NULL AND s.parent_session IS NULL
ORDER BY coalesce((SELECT e.ts FROM events e WHERE e.session = s.id
                   ORDER BY e.seq DESC LIMIT 1), s.started) DESC
LIMIT 1
"""
_AFTER_SQL = (
    f"SELECT session, seq, {', '.join(EVENT_COLUMNS)} FROM events WHERE session = ? "
    "AND seq > ? AND kind IN ('result', 'compaction') ORDER BY seq"
)
_CALL_SQL = "SELECT rid FROM events WHERE session = ? AND kind = 'result' AND call_ref = ? LIMIT 1"


class Probe:
    """One connection of the caller's own, read on the caller's thread."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    @classmethod
    def read_only(cls, store: Path | str, *, timeout: float = 5.0, any_thread: bool = False
                  ) -> Probe:  # fmt: skip
        """`any_thread`: the MCP server reads it from the SDK's worker threads too."""
        conn = sqlite3.connect(f"file:{os.fspath(store)}?mode=ro", uri=True, timeout=timeout,
                               check_same_thread=not any_thread)  # fmt: skip
        return cls(conn)

    @classmethod
    def read_write(cls, store: Path | str, *, timeout: float) -> Probe:
        """Opened read-write though it only reads: as the last connection of a process to close
        it folds the WAL back into the store, as the writer does (a read-only one cannot)."""
        return cls(sqlite3.connect(store, timeout=timeout, isolation_level=None))

    def close(self) -> None:
        self._conn.close()

    def last_seq(self, session_id: str) -> int:
        """The session's newest event seq (0 when none): one indexed lookup."""
        row = self._conn.execute(
            "SELECT coalesce(max(seq), 0) FROM events WHERE session = ?", (session_id,)
        ).fetchone()
        return int(row[0])

    def results_after(self, session_id: str, seq: int) -> list[Event]:
        """The session's results and compactions past `seq`, in order (`Session.catch_up`)."""
        rows = self._conn.execute(_AFTER_SQL, (session_id, seq)).fetchall()
        return [Event.from_row(r[0], r[1], r[2:]) for r in rows]

    def next_rid(self, session_id: str) -> int:
        """The next id of `session_id`'s tree as stored (`store.tree`): reserved ones included."""
        return tree.next_rid(self._conn, tree.root_of(self._conn, session_id))

    def members(self, root: str) -> list[str]:
        """The sessions of `root`'s tree, top first (`store.tree.members`)."""
        return tree.members(self._conn, root)

    def source_path(self, session_id: str) -> str | None:
        row = self._conn.execute(
            "SELECT source_path FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return row[0] if row is not None and row[0] else None

    def has_results(self, results: Iterable[tuple[str, int]]) -> bool:
        """Whether every (session, rid) of `results` is stored."""
        return all(self._conn.execute("SELECT 1 FROM events WHERE session = ? AND rid = ?",
                                      pair).fetchone() for pair in results)  # fmt: skip

    def has_body(self, session_id: str, rid: int) -> bool:
        """Whether recall would find body `rid` from `session_id` (`Writer.tree_stored_data`):
        in the session of its tree whose event holds it, else in its own (the proxy's elided
        texts have no event)."""
        sid = tree.holder(self._conn, session_id, rid) or session_id
        return self._conn.execute("SELECT 1 FROM bodies WHERE session = ? AND rid = ?",
                                  (sid, rid)).fetchone() is not None  # fmt: skip

    def result_of_call(self, session_id: str, call_ref: str) -> int | None:
        """The rid of the session's result that answers `call_ref`, when stored."""
        row = self._conn.execute(_CALL_SQL, (session_id, call_ref)).fetchone()
        return None if row is None else int(row[0])

    def last_compaction(self, session_id: str) -> int | None:
        """The seq of the session's newest compaction."""
        (seq,) = self._conn.execute(
            "SELECT max(seq) FROM events WHERE session = ? AND kind = 'compaction'",
            (session_id,)).fetchone()  # fmt: skip
        return None if seq is None else int(seq)

    def open_top_sessions(self, source: str, since: float
                          ) -> list[tuple[str, str, str, str | None]]:  # fmt: skip
        """(id, workspace, source_path, data) of the sessions of `source` started after `since`
        that have not ended, are no sub-agent and name their transcript."""
        return self._conn.execute(
            "SELECT id, workspace, source_path, data FROM sessions WHERE source = ? AND ended IS "
            "NULL AND parent_session IS NULL AND source_path IS NOT NULL AND started > ?",
            (source, since)).fetchall()  # fmt: skip


def live_session(store: Path | str, host: str, workspace: str) -> str | None:
    """The live top session of `host` whose workspace is `workspace`, the most recently active;
    None when there is none or the store cannot be read."""
    conn = sqlite3.connect(f"file:{os.fspath(store)}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute(_LIVE_SQL, (host, workspace)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return row[0] if row else None


def call_stored(store: Path | str, session_id: str, call_ref: str) -> bool:
    """Whether a result of the session answers `call_ref` (False when the store cannot be
    read)."""
    try:
        conn = sqlite3.connect(f"file:{os.fspath(store)}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return False
    try:
        return conn.execute(_CALL_SQL, (session_id, call_ref)).fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()
