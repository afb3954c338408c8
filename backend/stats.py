"""What hygiene saved, per session: the figures `ctxview stats` prints, from the store's events.

Per result, the base is what the agent really got (`seen_chars`, known for imported sessions),
else the stored text; what 3.0.0 shows is `shown_chars`. The difference is put down to the measure
that made it: an unchanged stub, a same-result stub, a cap, or the rest (`other`: ids, brackets,
numbered lines and diffs in place of the tool's own wording; it can be negative). The measures add
up to `chars_seen - chars_hygiene`. Tokens are estimated as characters / 4; the token figures from
the usage records are the model's own counts. `SessionStats` is a dataclass so later measures
(elision) can add fields without changing the command.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .store import Reader
from .store.records import SessionRow

CHARS_PER_TOKEN = 4
MEASURES = ("unchanged", "same", "cap", "other")
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_PAGE = 5000


def est_tokens(chars: int) -> int:
    return round(chars / CHARS_PER_TOKEN)


@dataclass
class SessionStats:
    id: str
    source: str
    title: str = ""
    parent_session: str | None = None
    results: int = 0
    compactions: int = 0
    messages: int = 0
    chars_seen: int = 0  # what the agent got (the stored text where the source did not say)
    chars_hygiene: int = 0  # what 3.0.0 shows
    chars_stored: int = 0
    stubs_unchanged: int = 0
    stubs_same: int = 0
    capped: int = 0
    saved: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEASURES, 0))
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    usage_messages: int = 0  # assistant messages that carried usage

    @property
    def chars_saved(self) -> int:
        return self.chars_seen - self.chars_hygiene

    def add(self, other: SessionStats) -> None:
        """Fold another session's figures into these (the total)."""
        for name in ("results", "compactions", "messages", "chars_seen", "chars_hygiene",
                     "chars_stored", "stubs_unchanged", "stubs_same", "capped",
                     "usage_messages"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k in MEASURES:
            self.saved[k] += other.saved[k]
        for k in USAGE_KEYS:
            self.usage[k] += other.usage[k]

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["chars_saved"] = self.chars_saved
        out["tokens_est_seen"] = est_tokens(self.chars_seen)
        out["tokens_est_hygiene"] = est_tokens(self.chars_hygiene)
        out["tokens_est_saved"] = est_tokens(self.chars_saved)
        return out


async def session_stats(reader: Reader, row: SessionRow) -> SessionStats:
    """One session's figures, reading its events a page at a time (no bodies)."""
    st = SessionStats(row.id, row.source, row.title, row.parent_session)
    after = 0
    while True:
        page = await reader.events(row.id, after=after, limit=_PAGE)
        if not page:
            break
        after = page[-1].seq
        for ev in page:
            if ev.kind == "compaction":
                st.compactions += 1
            elif ev.kind in ("message", "usage"):
                st.messages += ev.kind == "message"
                usage = _usage(ev.data)
                if usage:
                    st.usage_messages += 1
                    for k in USAGE_KEYS:
                        value = usage.get(k)
                        st.usage[k] += value if isinstance(value, int) else 0
            elif ev.kind == "result" and ev.rid is not None:
                st.results += 1
                shown = ev.shown_chars or 0
                stored = ev.stored_chars or 0
                base = ev.seen_chars if ev.seen_chars is not None else stored
                st.chars_seen += base
                st.chars_hygiene += shown
                st.chars_stored += stored
                if ev.rkind == "unchanged":
                    measure = "unchanged"
                    st.stubs_unchanged += 1
                elif ev.rkind == "same":
                    measure = "same"
                    st.stubs_same += 1
                elif ev.capped:
                    measure = "cap"
                    st.capped += 1
                else:
                    measure = "other"
                st.saved[measure] += base - shown
    return st


def _usage(data: str | None) -> dict[str, Any] | None:
    if not data or '"usage"' not in data:
        return None
    try:
        usage = json.loads(data).get("usage")
    except (ValueError, AttributeError):
        return None
    return usage if isinstance(usage, dict) else None


async def all_stats(
    reader: Reader, rows: list[SessionRow]
) -> tuple[list[SessionStats], SessionStats]:
    """Each session's figures and their total."""
    per = [await session_stats(reader, r) for r in rows]
    total = SessionStats("total", "")
    for st in per:
        total.add(st)
    return per, total
