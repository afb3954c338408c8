"""What an export reads from the store, in ranges, already redacted.

Export is a batch reader: plain sqlite3 on one connection (a range of events with their bodies
is one query), so a session of 100,000 results is read a chunk at a time and memory stays flat.
Every string a format will write passes through the `Redactor` here, before any format sees it:
a format cannot forget to redact (fail closed). Left as they are: the structural ids that link
records (session ids, call refs, result ids), which are never secrets.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctxview.export.redact import Redactor
from ctxview.store.connect import BUSY_TIMEOUT_MS
from ctxview.store.records import EVENT_COLUMNS, Event, SessionRow
from ctxview.store.schema import PRAGMAS, SCHEMA_VERSION, StoreError, check, ensure

CHUNK = 400  # events per range query

_E_COLS = ", ".join(f"e.{c}" for c in EVENT_COLUMNS)
_RANGE_SQL = (
    f"SELECT e.seq, {_E_COLS}, b.shown, "
    "CASE WHEN ?3 OR e.capped THEN CAST(b.stored AS TEXT) END "
    "FROM events e LEFT JOIN bodies b ON b.session = e.session AND b.rid = e.rid "
    "WHERE e.session = ?1 AND e.seq > ?2 ORDER BY e.seq LIMIT ?4"
)
# The lean pass: enough to group events into blocks, place them on pages and link ids, with
# each event's size on the page estimated here (escaped text, markup per line, colour spans).
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


@dataclass
class Item:
    """One event with its body: `shown` what the model was given, `stored` the full text
    (only when asked for, or the result was capped)."""

    event: Event
    shown: str | None = None
    stored: str | None = None


@dataclass
class SessionInfo:
    row: SessionRow
    children: list[SessionInfo] = field(default_factory=list)


class Source:
    """The store, read for an export. Strings come out redacted by `redactor`."""

    def __init__(self, path: Path, redactor: Redactor) -> None:
        path = Path(path)
        if not path.exists():
            raise StoreError(
                f"There is no store at {path}; `ctxview demo` or `ctxview import PATH` makes one."
            )
        self.path = path
        self.redactor = redactor
        try:
            self.conn = sqlite3.connect(path, isolation_level=None)
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            version = check(self.conn)
            if version is not None and version != SCHEMA_VERSION:
                # An older store is brought forward as every reader does (a newer one is
                # refused by check with its sentence).
                self.conn.executescript(PRAGMAS)
                ensure(self.conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"The store at {path} cannot be read: {exc}.") from None
        if version is None:
            raise StoreError(f"The store at {path} has no sessions yet.")

    def close(self) -> None:
        self.conn.close()

    # Sessions

    def sessions(self) -> list[SessionRow]:
        """Every session with the session list's figures, newest first (the reader's query)."""
        from ctxview.store.reader import _SESSION_SELECT, _session

        rows = self.conn.execute(_SESSION_SELECT + " ORDER BY s.started DESC, s.id").fetchall()
        return [self._clean_session(_session(r)) for r in rows]

    def tree(self, session_id: str) -> SessionInfo:
        """A session and its sub-agents (and theirs), oldest first."""
        by_parent: dict[str | None, list[SessionRow]] = {}
        rows = self.sessions()
        found = None
        for r in rows:
            by_parent.setdefault(r.parent_session, []).append(r)
            if r.id == session_id:
                found = r
        if found is None:
            raise StoreError(f"There is no session {session_id} in the store.")

        def build(row: SessionRow, seen: set[str]) -> SessionInfo:
            seen.add(row.id)
            kids = sorted(by_parent.get(row.id, []), key=lambda s: (s.started, s.id))
            return SessionInfo(row, [build(k, seen) for k in kids if k.id not in seen])

        return build(found, set())

    def resolve(self, ref: str | None) -> SessionRow:
        """A session by id or unique prefix; the newest top-level one when `ref` is None."""
        rows = self.sessions()
        if not rows:
            raise StoreError(f"The store at {self.path} has no sessions yet.")
        if ref is None:
            top = [r for r in rows if not r.parent_session] or rows
            return top[0]
        for r in rows:
            if r.id == ref:
                return r
        hits = [r for r in rows if r.id.startswith(ref)]
        if not hits:
            raise StoreError(f"There is no session {ref} in the store.")
        if len(hits) > 1:
            raise StoreError(f"More than one session starts with {ref}; give more of its id.")
        return hits[0]

    def _clean_session(self, row: SessionRow) -> SessionRow:
        r = self.redactor
        return replace(
            row,
            title=r.text(row.title) or "",
            workspace=r.text(row.workspace) or "",
            source_path=r.text(row.source_path),
            config=r.json_text(row.config) or "{}",
            data=r.json_text(row.data) or "{}",
        )

    # Events

    def lean(self, session_id: str) -> Iterator[tuple[Any, ...]]:
        """Every event of the session in order as a lean row (L_* positions), without bodies:
        a cursor, not a list. A prompt's first words come redacted."""
        text = self.redactor.text
        for row in self.conn.execute(_LEAN_SQL, (session_id,)):
            if row[L_PROMPT] is not None:
                row = (*row[:L_PROMPT], text(row[L_PROMPT]))
            yield row

    def items(self, session_id: str, *, stored: bool = False, after: int = 0) -> Iterator[Item]:
        """Every event with its body (past seq `after`), in order, read CHUNK events at a time.
        `stored`: the full stored text of every result (else only of a capped one, for its
        elided middle)."""
        while True:
            # Stepped a row at a time, not fetched as a list: a range of huge bodies never sits
            # in memory at once (other queries may run on the connection in between).
            n = 0
            for row in self.conn.execute(_RANGE_SQL, (session_id, after, int(stored), CHUNK)):
                n += 1
                after = row[0]
                yield self._item(session_id, row)
            if n < CHUNK:
                return

    def _item(self, session_id: str, row: tuple[Any, ...]) -> Item:
        n = len(EVENT_COLUMNS)
        ev = Event.from_row(session_id, row[0], row[1 : n + 1])
        r = self.redactor
        ev.tool = r.text(ev.tool)
        ev.args = r.json_text(ev.args)
        ev.text = r.text(ev.text)
        ev.path = r.text(ev.path)
        ev.data = r.json_text(ev.data)
        return Item(ev, r.text(row[n + 1]), r.text(row[n + 2]))


def extra(ev: Event) -> dict[str, Any]:
    """An event's data as a dict ({} when absent or not an object)."""
    if not ev.data:
        return {}
    try:
        value = json.loads(ev.data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
