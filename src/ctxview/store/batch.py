"""The store read in batches (an export): plain sqlite3 on one connection, no event loop, and
every range a cursor stepped a row at a time, so a session of 100,000 results is read a chunk
at a time and memory stays flat. Rows come out as stored; redacting them is the caller's."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxview.store.connect import BUSY_TIMEOUT_MS
from ctxview.store.reader import _SESSION_SELECT, _session
from ctxview.store.records import EVENT_COLUMNS, SessionRow
from ctxview.store.schema import PRAGMAS, SCHEMA_VERSION, StoreError, check, ensure

_E_COLS = ", ".join(f"e.{c}" for c in EVENT_COLUMNS)
# A range row: seq, EVENT_COLUMNS, shown, then stored when asked for (or the result was capped).
_RANGE_SQL = (
    f"SELECT e.seq, {_E_COLS}, b.shown, "
    "CASE WHEN ?3 OR e.capped THEN CAST(b.stored AS TEXT) END "
    "FROM events e LEFT JOIN bodies b ON b.session = e.session AND b.rid = e.rid "
    "WHERE e.session = ?1 AND e.seq > ?2 ORDER BY e.seq LIMIT ?4"
)
# The lean pass: enough to group events into blocks, place them on pages and link ids, with
# each event's size on an export's page estimated here (escaped text, markup per line, colour
# spans), in SQL: 100,000 rows are not sized in Python.
_LEAN_SQL = (
    "SELECT seq, kind, role, call_ref, rid, CASE WHEN kind = 'result' THEN "
    "  1.1 * coalesce(shown_chars, 0) + 300 + 12 * coalesce(shown_lines, 0) "
    "  + CASE WHEN capped THEN 0.85 * coalesce(stored_chars, 0) ELSE 0 END "
    "  + CASE WHEN rkind IN ('full', 'edit', 'created', 'deleted', 'moved', 'patch') "
    "    AND tool IN ('read', 'edit', 'multiedit', 'write', 'apply_patch') "
    "    THEN 1.5 * coalesce(shown_chars, 0) ELSE 0 END "
    "ELSE 200 + 1.3 * (coalesce(length(text), 0) + coalesce(length(args), 0) "
    "  + coalesce(length(data), 0)) END, "
    "CASE WHEN kind = 'message' AND role = 'user' THEN substr(text, 1, 300) END "
    "FROM events WHERE session = ? ORDER BY seq"
)
# Lean row positions.
L_SEQ, L_KIND, L_ROLE, L_CALL, L_RID, L_SIZE, L_PROMPT = range(7)


class BatchReader:
    """One store opened for reading in ranges. An older store is brought forward as every
    reader does; a newer one is refused by the schema check with its sentence."""

    def __init__(self, path: Path) -> None:
        path = Path(path)
        if not path.exists():
            raise StoreError(
                f"There is no store at {path}; `ctxview demo` or `ctxview import PATH` makes one."
            )
        self.path = path
        try:
            self._conn = sqlite3.connect(path, isolation_level=None)
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            version = check(self._conn)
            if version is not None and version != SCHEMA_VERSION:
                self._conn.executescript(PRAGMAS)
                ensure(self._conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"The store at {path} cannot be read: {exc}.") from None
        if version is None:
            raise StoreError(f"The store at {path} has no sessions yet.")

    def close(self) -> None:
        self._conn.close()

    def sessions(self) -> list[SessionRow]:
        """Every session with the session list's figures, newest first (the reader's query)."""
        rows = self._conn.execute(_SESSION_SELECT + " ORDER BY s.started DESC, s.id").fetchall()
        return [_session(r) for r in rows]

    def lean(self, session_id: str) -> Iterator[tuple[Any, ...]]:
        """Every event of the session in order as a lean row (L_* positions), without bodies:
        a cursor, not a list."""
        return self._conn.execute(_LEAN_SQL, (session_id,))

    def event_range(
        self, session_id: str, after: int, limit: int, *, stored: bool
    ) -> Iterator[tuple[Any, ...]]:
        """Up to `limit` events past seq `after` with their bodies, in order: a cursor (other
        queries may run on the connection while it is stepped). `stored`: the stored text of
        every result, else only of a capped one."""
        return self._conn.execute(_RANGE_SQL, (session_id, after, int(stored), limit))

    def call_refs(self, session_id: str) -> set[str]:
        """The call refs of the session's calls (what a sub-agent's parent call must be)."""
        return {
            r[0]
            for r in self._conn.execute(
                "SELECT call_ref FROM events WHERE session = ? AND kind = 'call' "
                "AND call_ref IS NOT NULL",
                (session_id,),
            )
        }

    def pointers(self, session_id: str) -> Iterator[tuple[int, int]]:
        """(rid, points_to) of every stub and recall of the session, in order: a cursor."""
        return self._conn.execute(
            "SELECT rid, points_to FROM events WHERE session = ? AND points_to IS NOT NULL "
            "AND rid IS NOT NULL ORDER BY seq",
            (session_id,),
        )
