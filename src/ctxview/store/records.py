"""The rows of the store as typed records, shared by the writer, the reader and the viewer."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

EVENT_COLUMNS = (
    "ts", "kind", "role", "tool", "call_ref", "args", "text", "rid", "rkind", "points_to",
    "capped", "elided_lines", "path", "line_from", "line_to", "line_total", "sha",
    "shown_chars", "shown_lines", "stored_chars", "stored_lines", "seen_chars", "data",
)  # fmt: skip

# Result kinds that stand in for another result.
STUB_KINDS = frozenset({"unchanged", "same"})


def json_object(data: str | None) -> dict[str, Any]:
    """A data column as a dict: {} when it is empty, not JSON, or JSON but not an object (a
    store pulled or edited by hand may hold anything; its readers all expect an object)."""
    if not data:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Event:
    """One event of a session. `seq` is given by the store; a result's facts are columns."""

    ts: float
    kind: str  # message | call | result | compaction | end
    role: str | None = None
    tool: str | None = None
    call_ref: str | None = None
    args: str | None = None
    text: str | None = None
    rid: int | None = None
    rkind: str | None = None
    points_to: int | None = None
    capped: int = 0
    elided_lines: int | None = None
    path: str | None = None
    line_from: int | None = None
    line_to: int | None = None
    line_total: int | None = None
    sha: str | None = None
    shown_chars: int | None = None
    shown_lines: int | None = None
    stored_chars: int | None = None
    stored_lines: int | None = None
    seen_chars: int | None = None
    data: str | None = None
    session: str = ""
    seq: int = 0

    def values(self) -> tuple[Any, ...]:
        return _event_values(self)

    @property
    def extra(self) -> dict[str, Any]:
        return json_object(self.data)

    @property
    def is_stub(self) -> bool:
        return self.rkind in STUB_KINDS

    @classmethod
    def from_row(cls, session: str, seq: int, row: tuple[Any, ...]) -> Event:
        # Positional: the fields start with EVENT_COLUMNS in order (checked below the class);
        # four times faster than by name, which counts when a viewer or a resume reads 100k.
        return cls(*row, session=session, seq=seq)  # type: ignore[misc]  # row stops before them


assert tuple(f.name for f in fields(Event))[: len(EVENT_COLUMNS)] == EVENT_COLUMNS
_event_values = attrgetter(*EVENT_COLUMNS)


@dataclass
class Body:
    rid: int
    shown: str
    stored: str


@dataclass
class SessionRow:
    id: str
    title: str
    workspace: str
    source: str
    source_path: str | None
    source_ref: str | None
    parent_session: str | None
    parent_call: str | None
    started: float
    ended: float | None
    config: str
    next_rid: int
    data: str
    # Derived by the reader's list query.
    results: int = 0
    events: int = 0
    compactions: int = 0
    chars_shown: int = 0
    chars_stored: int = 0
    chars_saved: int = 0
    chars_seen: int = 0
    last_seq: int = 0
    lease_until: float | None = None  # a writer's lease (schema 4): live while it holds

    @property
    def live(self) -> bool:
        """A writer is attached: not ended, and its writer's lease holds now."""
        return (
            self.ended is None and self.lease_until is not None and self.lease_until > time.time()
        )

    @property
    def left_at(self) -> float | None:
        """When it stopped being live: its end, else when its writer left (None: never leased,
        as an older store's sessions, or live now)."""
        if self.ended is not None:
            return self.ended
        return None if self.live else self.lease_until

    @property
    def overrides(self) -> dict[str, Any]:
        overrides: dict[str, Any] = json.loads(self.config or "{}")
        return overrides

    @property
    def extra(self) -> dict[str, Any]:
        return json_object(self.data)

    def as_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.pop("config"), out.pop("data")
        out["config"] = self.overrides
        out["data"] = self.extra
        return out


SESSION_COLUMNS = tuple(f.name for f in fields(SessionRow))[:13]


@dataclass
class Pending:
    """What one engine step writes: events and bodies, committed together."""

    events: list[Event] = field(default_factory=list)
    bodies: list[Body] = field(default_factory=list)
    fts_max_chars: int | None = None  # the session's `fts.max_chars`; None: the writer's
