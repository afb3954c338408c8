"""A session as JSON Lines: its records exactly as stored, in a versioned schema that
`ctxview import` reads back (docs/export-json.md describes it). Written as it is read."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..store.records import EVENT_COLUMNS, SessionRow
from .plan import Space
from .source import SessionInfo, Source

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


def write(source: Source, info: SessionInfo, out: Path, note: Callable[[], str],
          counts: Callable[[], dict[str, int]], redacted: bool) -> list[Path]:  # fmt: skip
    """The session and its sub-agents (parents first), one record a line."""
    sessions = _walk(info)
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        _line(f, {"type": "export", "format": FORMAT, "version": VERSION,
                  "exported": time.time(), "session": info.row.id,
                  "sessions": [s.row.id for s in sessions], "redacted": redacted})  # fmt: skip
        for s in sessions:
            _line(f, session_record(s.row))
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
                _line(f, rec)
        _line(f, {"type": "end", "redactions": counts(), "note": note()})
    return [out]


def _line(f: IO[str], record: dict[str, Any]) -> None:
    f.write(_dump(record))
    f.write("\n")


__all__ = ["FORMAT", "VERSION", "Space", "write"]
