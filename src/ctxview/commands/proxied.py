"""A session's proxied requests read back for pricing: each body exactly as forwarded
(`proxy.record.rebuild`), its model, usage and time, and the stored texts of its stubs."""

from __future__ import annotations

import json
from typing import Any

from ctxview.context.request_cost import Sent, stub_ids
from ctxview.context.requests import rebuild_stored
from ctxview.store import Reader


def model_of(row: Any, body: Any) -> str | None:
    if row.answer:
        try:
            a = json.loads(row.answer)
        except ValueError:
            a = None
        if isinstance(a, dict) and a.get("model"):
            return str(a["model"])
    m = body.get("model") if isinstance(body, dict) else None
    return str(m) if m else None


def _answer(row: Any) -> Any:
    try:
        return json.loads(row.answer) if row.answer else None
    except ValueError:
        return None


async def load(reader: Reader, sid: str) -> tuple[list[Any], list[Sent], dict[int, str]]:
    """(the proxy rows, the requests the model answers as `Sent`, the stubs' stored texts)."""
    from ctxview.proxy import protocols
    from ctxview.proxy.record import rebuild

    rows = await reader.proxy_records(sid)
    recorded = {r.id: r for r in rebuild_stored(await reader.api_request_rows(sid))}
    sent = []
    for row in rows:
        if not protocols.recorded(row.protocol):
            continue
        body = rebuild(row, recorded.get(row.request_id))
        usage = json.loads(row.usage) if row.usage else None
        sent.append(Sent(body, row.started, model_of(row, body), row.protocol, usage,
                         _answer(row)))  # fmt: skip
    texts = await reader.proxy_texts(sid, stub_ids([s.body for s in sent]))
    return rows, sent, texts
