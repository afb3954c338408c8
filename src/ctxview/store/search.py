"""Full-text search over a store: tool results (bodies_fts) and, since schema 3, messages,
calls, thinking and compaction summaries (events_fts). Hits are events, in session order, with
a snippet made from the event's text around the first word that matched."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

import aiosqlite

from ctxview.store.connect import fetch_all
from ctxview.store.schema import EVENT_ROWID

SNIPPET = 100  # characters of context in a snippet
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Hit:
    session: str
    seq: int
    kind: str  # message | call | result | compaction
    rid: int | None = None
    role: str | None = None
    tool: str | None = None
    snippet: str = ""

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def fts_query(text: str) -> str:
    """Plain words to an FTS5 query: every word must appear (as a prefix for the last one), so
    a person never has to know FTS5's syntax and never hits its syntax errors."""
    words = _WORD.findall(text)
    if not words:
        return ""
    quoted = [f'"{w}"' for w in words]
    quoted[-1] += "*"
    return " ".join(quoted)


async def has_event_index(conn: aiosqlite.Connection) -> bool:
    """An older store (schema 2, opened read-only) has only the results' index."""
    rows = await fetch_all(
        conn, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events_fts'"
    )
    return bool(rows)


async def search(
    conn: aiosqlite.Connection, query: str, *, session: str | None = None, limit: int = 1000
) -> tuple[list[Hit], bool]:
    """The events matching `query` (in one session, or in all of them: newest session first),
    at most `limit`, and whether there were more."""
    match = fts_query(query)
    if not match:
        return [], False
    params: tuple[object, ...]
    where = "WHERE bodies_fts MATCH ?"
    params = (match,)
    if session is not None:
        where += " AND b.session = ?"
        params += (session,)
    found: list[tuple[str, int, str, int | None]] = []  # (session, seq, kind, rid)
    rows = await fetch_all(
        conn,
        "SELECT e.session, e.seq, e.rid FROM bodies_fts f JOIN bodies b ON b.rowid = f.rowid "
        f"JOIN events e ON e.session = b.session AND e.rid = b.rid {where} LIMIT ?",
        (*params, limit + 1),
    )
    found.extend((r[0], r[1], "result", r[2]) for r in rows)
    if await has_event_index(conn):
        sql = (
            f"SELECT s.id, f.rowid - s.rowid * {EVENT_ROWID} FROM events_fts f "
            f"JOIN sessions s ON s.rowid = f.rowid / {EVENT_ROWID} WHERE events_fts MATCH ?"
        )
        eparams: tuple[object, ...] = (match,)
        if session is not None:
            base = await fetch_all(conn, "SELECT rowid FROM sessions WHERE id = ?",
                                               (session,))  # fmt: skip
            if not base:
                return [], False
            sql += " AND f.rowid BETWEEN ? AND ?"
            start = base[0][0] * EVENT_ROWID
            eparams += (start, start + EVENT_ROWID - 1)
        rows = await fetch_all(conn, sql + " LIMIT ?", (*eparams, limit + 1))
        found.extend((r[0], r[1], "", None) for r in rows)
    more = len(found) > limit
    order = await _session_order(conn, {f[0] for f in found})
    found.sort(key=lambda f: (order.get(f[0], 0), f[1]))
    found = found[:limit]
    return await _hits(conn, found, query), more


async def _session_order(conn: aiosqlite.Connection, ids: set[str]) -> dict[str, int]:
    """Newest session first, so a search across sessions shows recent work at the top."""
    if len(ids) <= 1:
        return {}
    marks = ",".join("?" for _ in ids)
    rows = await fetch_all(
        conn, f"SELECT id FROM sessions WHERE id IN ({marks}) ORDER BY started DESC, id", tuple(ids)
    )
    return {r[0]: i for i, r in enumerate(rows)}


async def _hits(
    conn: aiosqlite.Connection, found: list[tuple[str, int, str, int | None]], query: str
) -> list[Hit]:
    """The events' kinds and texts, for their snippets (one query per session touched)."""
    by_session: dict[str, list[int]] = {}
    for sid, seq, _, _ in found:
        by_session.setdefault(sid, []).append(seq)
    info: dict[tuple[str, int], tuple[object, ...]] = {}
    for sid, seqs in by_session.items():
        for i in range(0, len(seqs), 500):
            chunk = seqs[i : i + 500]
            marks = ",".join("?" for _ in chunk)
            rows = await fetch_all(
                conn,
                "SELECT e.seq, e.kind, e.rid, e.role, e.tool, e.text, e.args, e.data, "
                "substr(b.shown, 1, 200000) FROM events e LEFT JOIN bodies b "
                "ON b.session = e.session AND b.rid = e.rid "
                f"WHERE e.session = ? AND e.seq IN ({marks})",
                (sid, *chunk),
            )
            for r in rows:
                info[(sid, r[0])] = r[1:]
    words = [w.lower() for w in _WORD.findall(query)]
    out: list[Hit] = []
    seen: set[tuple[str, int]] = set()
    for sid, seq, _, _ in found:
        row = info.get((sid, seq))
        if row is None or (sid, seq) in seen:
            continue
        seen.add((sid, seq))
        kind, rid, role, tool, text, args, data, shown = row
        if kind == "call":
            source = f"{tool} {args or ''}"
        elif kind == "result":
            source = str(shown or "")
        else:
            source = str(text or "")
            thinking = _thinking(data)
            if thinking and not _contains(source, words):
                source = thinking
        out.append(Hit(sid, seq, str(kind), rid if isinstance(rid, int) else None,
                       role if isinstance(role, str) else None,
                       tool if isinstance(tool, str) else None,
                       snippet(source, words)))  # fmt: skip
    return out


def _thinking(data: object) -> str:
    if not isinstance(data, str) or "thinking" not in data:
        return ""
    try:
        extra = json.loads(data)
    except ValueError:
        return ""
    value = extra.get("thinking") if isinstance(extra, dict) else None
    return value if isinstance(value, str) else ""


def _contains(text: str, words: list[str]) -> bool:
    low = text.lower()
    return any(w in low for w in words)


def snippet(text: str, words: list[str], width: int = SNIPPET) -> str:
    """One line of `text` around the first of `words` it holds (the text's start otherwise)."""
    low = text.lower()
    at = min((i for i in (low.find(w) for w in words) if i >= 0), default=0)
    start = max(at - width // 3, 0)
    piece = " ".join(text[start : start + width].split())
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")
