"""`ctxview search --store postgresql://…`: the team store's messages, calls, summaries and
results that hold every word, in PostgreSQL's own full-text index (the 'simple' configuration:
no stemming, like the local store's FTS5)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ctxview.sync.remote import connect

SNIPPET = 80


@dataclass
class RemoteHit:
    machine: str
    session: str
    seq: int
    kind: str
    rid: int | None
    label: str | None
    snippet: str

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _snippet(text: str, words: list[str]) -> str:
    low = text.lower()
    at = min((i for w in words if (i := low.find(w.lower())) >= 0), default=0)
    start = max(0, at - SNIPPET // 3)
    return " ".join(text[start : start + SNIPPET].split())


async def search(url: str, query: str, *, session: str | None = None,
                 limit: int = 200) -> tuple[list[RemoteHit], bool]:  # fmt: skip
    words = re.findall(r"\w+", query)
    if not words:
        return [], False
    tsq = " & ".join(w.lower() for w in words)
    conn = await connect(url, autocommit=True)
    try:
        only = "AND session = %(s)s" if session else ""
        cur = await conn.execute(
            f"""
            (SELECT e.machine, e.session, e.seq, e.kind, e.rid, coalesce(e.role, e.tool),
                    convert_to(left(coalesce(e.text, e.tool || ' ' || e.args, ''), 4000), 'UTF8'), e.ts
             FROM ctxview_events e WHERE e.fts @@ to_tsquery('simple', %(q)s) {only})
            UNION ALL
            (SELECT b.machine, b.session, e.seq, 'result', b.rid, e.tool,
                    substring(b.stored from 1 for 4000), e.ts
             FROM ctxview_bodies b JOIN ctxview_events e ON e.machine = b.machine AND
                  e.session = b.session AND e.rid = b.rid AND e.kind = 'result'
             WHERE b.fts @@ to_tsquery('simple', %(q)s) {only.replace("session", "b.session")})
            ORDER BY 8 DESC LIMIT %(n)s
            """,
            {"q": tsq, "s": session, "n": limit + 1},
        )
        rows = await cur.fetchall()
    finally:
        await conn.close()
    hits = [RemoteHit(r[0], r[1], r[2], r[3], r[4], r[5], _snippet(bytes(r[6] or b"").decode("utf-8", "replace"), words))
            for r in rows[:limit]]  # fmt: skip
    return hits, len(rows) > limit
