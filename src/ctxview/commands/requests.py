"""`ctxview requests [SESSION] [--json]`: a session's proxied requests, a line each; with
`--json` one JSON object a line whose `body` is the request exactly as forwarded and whose
`response` is the reassembled answer (for `jq`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from ctxview.commands import proxied
from ctxview.commands.common import open_reader
from ctxview.context.request_cost import billed, load_prices, session_cost
from ctxview.context.requests import rebuild_stored
from ctxview.rules.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="?", help="session id or unique prefix "
                        "(default: the newest with proxied requests)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON object a line")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from ctxview.commands.errors import CliError
    from ctxview.proxy.record import rebuild

    reader = await open_reader(args)
    try:
        if args.session is None:
            found = await reader.proxy_sessions()
            if not found:
                raise CliError(f"The store at {reader.path} has no proxied requests yet.")
            sid = found[0][0]
        else:
            sid = (await reader.resolve_session(args.session)).id
        rows = await reader.proxy_records(sid)
        recorded = {r.id: r for r in rebuild_stored(await reader.api_request_rows(sid))}
        _, sent, texts = await proxied.load(reader, sid)
    finally:
        await reader.close()
    if not rows:
        print(f"No proxied requests in session {sid}.", file=sys.stderr)
        return 0
    table = load_prices()
    if args.json:
        for row in rows:
            out = _as_json(row, rebuild(row, recorded.get(row.request_id)))
            out["cost_usd"] = _row_cost(row, out["body"], table)
            print(json.dumps(out, ensure_ascii=False))
        return 0
    from ctxview.proxy.answers import usage_figures

    print(f"{sid}: {len(rows)} proxied request(s)")
    print(f"{'TIME':19} {'PROTOCOL':18} {'MODEL':24} {'BYTES':>10} {'STATUS':>6} {'IN':>8} "
          f"{'OUT':>7} {'CACHE R':>8} {'CACHE W':>8} {'COST $':>9} {'1ST MS':>7} {'MS':>7}  OUTCOME")  # fmt: skip
    for row in rows:
        u = usage_figures(json.loads(row.usage) if row.usage else None)
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.started))
        model = str(_model(row) or "-")[:24]
        print(f"{when:19} {row.protocol:18} {model:24} {row.body_bytes:>10,} "
              f"{row.status if row.status is not None else '-':>6} {u['input']:>8} "
              f"{u['output']:>7} {u['cache_read']:>8} {u['cache_write']:>8} "
              f"{_usd(_row_cost(row, None, table)):>9} {_ms(row.first_byte_ms):>7} {_ms(row.total_ms):>7}  {row.outcome}"
              + (f" ({row.note})" if row.note else ""))  # fmt: skip

    sc = session_cost(sent, texts, table, Config())
    print(f"cost ${sc.total:,.4f} by the answers' own usage ({sc.unpriced} request(s) of a model "
          f"the price table of {sc.prices_date} does not name)")  # fmt: skip
    if sc.was_elided:
        w, wo = sc.with_elision, sc.without_elision
        print(f"elided: {sc.stubs} stubs; replayed with the same cache model, ${w.cost:,.4f} with "
              f"elision, ${wo.cost:,.4f} without (x{sc.ratio or 0:.2f}); cache breaks "
              f"{w.breaks} with, {wo.breaks} without")  # fmt: skip
    return 0


def _usd(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _row_cost(row: Any, body: Any, table: Any) -> float | None:
    from ctxview.context.request_cost import Sent

    if row.usage is None:
        return None
    s = Sent(body, row.started, proxied.model_of(row, body), row.protocol, json.loads(row.usage))
    c = billed(s, table)
    return None if c is None else round(c, 6)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def _model(row: Any) -> Any:
    if row.answer:
        try:
            a = json.loads(row.answer)
        except ValueError:
            a = None
        if isinstance(a, dict) and a.get("model"):
            return a["model"]
    return None


def _as_json(row: Any, body: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "session": row.session, "seq": row.seq, "time": row.started, "protocol": row.protocol,
        "method": row.method, "path": row.path, "upstream": row.upstream, "status": row.status,
        "outcome": row.outcome, "note": row.note, "first_byte_ms": row.first_byte_ms,
        "total_ms": row.total_ms, "body_bytes": row.body_bytes, "body_sha256": row.body_sha256,
        "parsed": bool(row.parsed) or body is not None,
        "request_headers": json.loads(row.request_headers),
        "response_headers": json.loads(row.response_headers) if row.response_headers else None,
        "body": body,
        "response": json.loads(row.answer) if row.answer else None,
        "usage": json.loads(row.usage) if row.usage else None,
    }  # fmt: skip
    if body is None and row.body_raw is not None:
        out["body_text"] = bytes(row.body_raw).decode("utf-8", "replace")
    if out["response"] is None and row.answer_raw is not None:
        out["response_text"] = bytes(row.answer_raw).decode("utf-8", "replace")
    return out
