"""How a session's live state reads: live while a writer holds its lease (schema 4)."""

from __future__ import annotations

from ctxview.store.records import SessionRow


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
    return "".join(header_parts(row))


def header_parts(row: SessionRow) -> tuple[str, str]:
    """The title line in its two parts: the title, which gives way when the line is short, and
    the id and state, which always show."""
    return row.title or row.id, f" · {row.id} · {state_text(row)}"
