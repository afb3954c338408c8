"""A session as JSON Lines: its records exactly as stored, in a versioned schema that
`ctxview import` reads back (docs/export-json.md describes it). Written as it is read."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import IO, Any

from ctxview.export.plan import Space
from ctxview.export.source import SessionInfo, Source
from ctxview.export.tally import Tally
from ctxview.store.records import EVENT_COLUMNS, SessionRow

FORMAT = "ctxview-export"
VERSION = 1

SESSION_FIELDS = ("id", "title", "workspace", "source", "source_path", "source_ref",
                  "parent_session", "parent_call", "started", "ended", "next_rid")  # fmt: skip


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def session_record(row: SessionRow) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "session"}
    out.update({k: getattr(row, k) for k in SESSION_FIELDS})
    out["config"] = row.config
    out["data"] = row.data
    out["figures"] = {"results": row.results, "events": row.events,
                      "compactions": row.compactions, "chars_shown": row.chars_shown,
                      "chars_stored": row.chars_stored, "chars_saved": row.chars_saved}  # fmt: skip
    return out


def _walk(info: SessionInfo) -> list[SessionInfo]:
    out = [info]
    for child in info.children:
        out.extend(_walk(child))
    return out


def write(source: Source, info: SessionInfo, out: Path, tally: Tally) -> list[Path]:
    """The session and its sub-agents (parents first), one record a line; the last says what
    redaction markers the lines before it hold (`tally` counts them as they are written)."""
    sessions = _walk(info)
    redacted = tally.redacted
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        _line(f, {"type": "export", "format": FORMAT, "version": VERSION,
                  "exported": time.time(), "session": info.row.id,
                  "sessions": [s.row.id for s in sessions], "redacted": redacted}, tally)  # fmt: skip
        for s in sessions:
            _line(f, session_record(s.row), tally)
            for item in source.items(s.row.id, stored=True):
                ev = item.event
                rec: dict[str, Any] = {"type": "event", "session": s.row.id, "seq": ev.seq}
                for col in EVENT_COLUMNS:
                    value = getattr(ev, col)
                    if value is not None and not (col == "capped" and value == 0):
                        rec[col] = value
                if ev.rid is not None and item.shown is not None:
                    rec["shown"] = item.shown
                    rec["stored"] = item.stored if item.stored is not None else ""
                _line(f, rec, tally)
        _line(f, {"type": "end", "redactions": dict(tally.counts), "note": tally.note()}, None)
    return [out]


def _line(f: IO[str], record: dict[str, Any], tally: Tally | None) -> None:
    text = _dump(record)
    f.write(tally.add(text) if tally is not None else text)
    f.write("\n")


__all__ = ["FORMAT", "VERSION", "Space", "write"]
