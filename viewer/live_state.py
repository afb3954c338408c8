"""How a session's live state reads: live while a writer holds its lease (schema 4)."""

from __future__ import annotations

from ctxview.backend.store.records import SessionRow


def state_text(row: SessionRow) -> str:
    """'live'; 'ended' (its end recorded); 'not live: no writer' (its writer closed or died
    without ending it, or a store from before leases). Words only, no clock time, so that what a
    screen shows does not depend on when a test ran or in which time zone."""
    if row.live:
        return "live"
    if row.ended is not None:
        return "ended"
    return "not live: no writer"


def header_text(row: SessionRow) -> str:
    """A transcript's title line: its title, id and state."""
    return f"{row.title or row.id} · {row.id} · {state_text(row)}"
