"""`ctxview import` of a file `ctxview export --format json` wrote: the same sessions, ids,
sequence numbers and texts in another store. A session already in the store is left as it is
(an import of the same file twice adds nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxview.export.jsonl import FORMAT, VERSION
from ctxview.files.regular import open_regular
from ctxview.importers.common import parse_line
from ctxview.importers.detect import NotTranscript
from ctxview.importers.file_report import FileReport, Problem
from ctxview.store import Writer
from ctxview.store.records import EVENT_COLUMNS, Body, Event

_INT = {"rid", "points_to", "capped", "elided_lines", "line_from", "line_to", "line_total",
        "shown_chars", "shown_lines", "stored_chars", "stored_lines", "seen_chars"}  # fmt: skip


def is_export(record: Any) -> bool:
    """The first line of an export (what format detection looks for)."""
    return isinstance(record, dict) and record.get("format") == FORMAT and "version" in record


class BadExport(NotTranscript):
    """The file is an export this ctxview cannot read; the message is one sentence (the import
    command reports it as it does a file of neither format)."""


def _event(rec: dict[str, Any]) -> Event:
    fields: dict[str, Any] = {}
    for col in EVENT_COLUMNS:
        if col in rec:
            value = rec[col]
            if col in _INT and value is not None and not isinstance(value, int):
                raise BadExport(f"field {col} is not a number")
            fields[col] = value
    if not isinstance(fields.get("ts"), (int, float)) or not isinstance(fields.get("kind"), str):
        raise BadExport("an event needs a ts and a kind")
    return Event(**fields)


async def import_export(writer: Writer, path: Path) -> FileReport:
    """Import every session of the export at `path`."""
    report = FileReport(str(path), format=FORMAT)
    skip: set[str] = set()
    created: set[str] = set()
    with open_regular(path) as f:
        try:
            header = parse_line(f.readline() or b"{}")
        except ValueError:  # not JSON, or nested too deep
            header = None
        if not is_export(header):
            raise BadExport(f"{path} does not start with a ctxview export header.")
        if int(header["version"]) > VERSION:
            raise BadExport(
                f"{path} was exported by a newer ctxview (version {header['version']}; this one "
                f"reads up to {VERSION}); upgrade ctxview to import it."
            )
        report.session = header.get("session")
        report.lines = 1
        async with writer.batch():
            for n, raw in enumerate(f, start=2):
                report.lines += 1
                report.bytes += len(raw)
                if not raw.strip():
                    continue
                try:
                    rec = parse_line(raw)  # a line nested too deep: TooDeep, listed
                    kind = rec.get("type")
                    if kind == "session":
                        await _session(writer, rec, skip, created)
                    elif kind == "event":
                        sid = rec.get("session")
                        if sid in skip or sid not in created:
                            continue
                        ev = _event(rec)
                        bodies = []
                        if ev.rid is not None and "shown" in rec:
                            bodies = [Body(ev.rid, str(rec["shown"]), str(rec.get("stored", "")))]
                        await writer.append(sid, [ev], bodies)
                except (BadExport, ValueError, TypeError, AttributeError, KeyError) as exc:
                    report.problems.append(Problem(str(path), n, str(exc)))
    if not created:
        report.lines = report.bytes = 0  # every session was here already: nothing new
    return report


async def _session(writer: Writer, rec: dict[str, Any], skip: set[str], created: set[str]) -> None:
    sid = rec["id"]
    if not isinstance(sid, str) or not sid:
        raise BadExport("a session needs an id")
    if await writer.session_info(sid) is not None:
        skip.add(sid)  # already here: an import adds nothing to it
        return
    await writer.flush()
    await writer.create_session(
        sid, title=rec.get("title") or "", workspace=rec.get("workspace") or "",
        source=rec.get("source") or "live", config=rec.get("config") or "{}",
        next_rid=int(rec.get("next_rid") or 0), started=rec.get("started"),
        source_path=rec.get("source_path"), source_ref=rec.get("source_ref"),
        parent_session=rec.get("parent_session"), parent_call=rec.get("parent_call"),
        data=rec.get("data") or "{}",
    )  # fmt: skip
    if rec.get("ended") is not None:
        await writer.update_session(sid, ended=rec["ended"])
    created.add(sid)
