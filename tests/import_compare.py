"""A store's imported sessions dumped canonically, so two imports of the same transcripts can be
compared whole: every session's fields, every event (every column, in order) and every body's
texts. What may differ between two correct imports is left out: the import state's own
bookkeeping (offsets, inode, commit token) and, for a followed session, whether it has ended."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ctxview.importers.runner import import_file
from ctxview.store import Writer
from ctxview.store.records import EVENT_COLUMNS

_SESSION_COLUMNS = ("id", "title", "workspace", "source", "source_path", "source_ref",
                    "parent_session", "parent_call", "started", "ended", "config", "next_rid",
                    "data")  # fmt: skip


def _session_data(raw: str) -> Any:
    data = json.loads(raw or "{}")
    data.pop("import", None)  # where the reading stopped, how many commits: bookkeeping
    return data


def dump(store: Path, *, ended: bool = True) -> dict[str, Any]:
    """{session id: {"session": fields, "events": [rows], "bodies": [rows]}} of a store."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        out: dict[str, Any] = {}
        for row in conn.execute(f"SELECT {', '.join(_SESSION_COLUMNS)} FROM sessions ORDER BY id"):
            fields = dict(zip(_SESSION_COLUMNS, row, strict=True))
            fields["data"] = _session_data(fields["data"])
            if not ended:
                fields.pop("ended")
            sid = fields["id"]
            events = conn.execute(
                f"SELECT seq, {', '.join(EVENT_COLUMNS)} FROM events WHERE session = ? "
                "ORDER BY seq", (sid,)).fetchall()  # fmt: skip
            bodies = conn.execute(
                "SELECT rid, shown, CAST(stored AS TEXT) FROM bodies WHERE session = ? "
                "ORDER BY rid", (sid,)).fetchall()  # fmt: skip
            out[sid] = {"session": fields, "events": events, "bodies": bodies}
        return out
    finally:
        conn.close()


def counts(store: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("sessions", "events", "bodies")}  # fmt: skip
    finally:
        conn.close()


def differences(a: dict[str, Any], b: dict[str, Any], *, limit: int = 5) -> list[str]:
    """Where two dumps differ, in a few sentences (empty when they are the same)."""
    out: list[str] = []
    for sid in sorted(set(a) | set(b)):
        if sid not in a or sid not in b:
            out.append(f"session {sid} only in {'the second' if sid not in a else 'the first'}")
            continue
        sa, sb = a[sid], b[sid]
        if sa["session"] != sb["session"]:
            keys = [k for k in sa["session"] if sa["session"][k] != sb["session"].get(k)]
            out.append(f"{sid}: session fields differ: {keys} "
                       f"{[(sa['session'][k], sb['session'].get(k)) for k in keys][:2]!r:.400}")  # fmt: skip
        for what in ("events", "bodies"):
            ra, rb = sa[what], sb[what]
            if ra == rb:
                continue
            n = next((i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y),
                     min(len(ra), len(rb)))  # fmt: skip
            out.append(f"{sid}: {len(ra)} vs {len(rb)} {what}; first difference at #{n}: "
                       f"{ra[n] if n < len(ra) else None!r:.300} vs "
                       f"{rb[n] if n < len(rb) else None!r:.300}")  # fmt: skip
        if len(out) >= limit:
            break
    return out


async def _import(store: Path, path: Path) -> None:
    writer = await Writer.open(store)
    try:
        async with writer.batch():
            await import_file(writer, path)
    finally:
        await writer.close()


async def grown(data: bytes, cuts: list[int], work: Path, name: str) -> list[str]:
    """Import `data` written in the parts `cuts` gives (byte offsets), and once whole; the
    differences between the two stores."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / name
    clean, parted = work / "clean.db", work / "parted.db"
    for p in (clean, parted):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{p}{suffix}").unlink(missing_ok=True)
    path.write_bytes(data)
    await _import(clean, path)
    with open(path, "r+b") as f:  # the same inode, grown in place
        f.truncate(0)
    for cut in [*cuts, len(data)]:
        with open(path, "r+b") as f:
            f.seek(0)
            f.write(data[:cut])
        await _import(parted, path)
    return differences(dump(clean), dump(parted))


def line_ends(data: bytes) -> list[int]:
    out, pos = [], 0
    while (i := data.find(b"\n", pos)) >= 0:
        out.append(i + 1)
        pos = i + 1
    return out
