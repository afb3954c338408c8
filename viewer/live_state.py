"""How a session's live state reads: live while a writer holds its lease, else since when not."""

from __future__ import annotations

import time

from ctxview.backend.store.records import SessionRow


def _clock(ts: float, now: float) -> str:
    """A time of day today, else with its date."""
    same_day = time.localtime(ts)[:3] == time.localtime(now)[:3]
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M", time.localtime(ts))


def state_text(row: SessionRow, now: float | None = None) -> str:
    """'live', 'ended 10:42:05', 'no writer since 10:42:05' (its writer left or died without
    ending it), or 'not live' (never leased: a store from before leases)."""
    now = time.time() if now is None else now
    if row.live:
        return "live"
    if row.ended is not None:
        return f"ended {_clock(row.ended, now)}"
    if row.lease_until is not None:
        return f"no writer since {_clock(min(row.lease_until, now), now)}"
    return "not live"


def header_text(row: SessionRow, now: float | None = None) -> str:
    """A transcript's title line: its title, id and state."""
    return f"{row.title or row.id} · {row.id} · {state_text(row, now)}"
