"""What an export reads from the store, in ranges, already redacted.

The store's batch reader (store/batch.py) reads a range of events with their bodies in one
query, so a session of 100,000 results is read a chunk at a time and memory stays flat.
Every string a format will write passes through the `Redactor` here, before any format sees it:
a format cannot forget to redact (fail closed). Left as they are: the structural ids that link
records (session ids, call refs, result ids), which are never secrets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctxview.export.redact import Redactor
from ctxview.store.batch import L_CALL, L_KIND, L_PROMPT, L_RID, L_ROLE, L_SEQ, L_SIZE, BatchReader
from ctxview.store.records import EVENT_COLUMNS, Event, SessionRow
from ctxview.store.schema import StoreError

__all__ = ["L_CALL", "L_KIND", "L_PROMPT", "L_RID", "L_ROLE", "L_SEQ", "L_SIZE", "Item",
           "SessionInfo", "Source", "extra"]  # fmt: skip

CHUNK = 400  # events per range query


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
        self.store = BatchReader(path)
        self.path = self.store.path
        self.redactor = redactor

    def close(self) -> None:
        self.store.close()

    # Sessions

    def sessions(self) -> list[SessionRow]:
        """Every session with the session list's figures, newest first (the reader's query)."""
        return [self._clean_session(r) for r in self.store.sessions()]

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
        for row in self.store.lean(session_id):
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
            for row in self.store.event_range(session_id, after, CHUNK, stored=stored):
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
