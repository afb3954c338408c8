"""The replay `ctxview stats` and bench/bench_proxy_cost.py price a session with: what a
request shares with the one before it read from the cache at the read price, the rest written at
the write price (a stride's break too), nothing read once the cache's 5 minutes passed since the
previous request by the recorded times, an hour where a breakpoint asks for it. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from ctxview.context.request_cost import Sent, pieces, replay
from ctxview.context.request_elide import Elider
from ctxview.rules.as_sent import Price, PriceTable
from ctxview.rules.config import Config

# Per million tokens, chosen apart so each part of a cost is told from the others.
TABLE = PriceTable("2026-12-01", {"m": Price(input=1.0, output=100.0, cache_write=10.0,
                                              cache_read=0.5)})  # fmt: skip
CONFIG = Config({"elide.threshold_chars": 20_000, "elide.min_chars": 300})


def _conversation(turns: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for t in range(turns):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{t}",
                     "name": "Bash", "input": {}}]})  # fmt: skip
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{t}",
                     "content": f"{t} " + "x" * 3000}]})  # fmt: skip
    return msgs


def _sent(body: Any, ts: float) -> Sent:
    return Sent(body, ts, "m", "anthropic-messages", {"input_tokens": 1, "output_tokens": 8})


def _chars(body: Any) -> int:
    return sum(map(len, pieces(body)))


def _usd(read: int, write: int, out: int = 8) -> float:
    tok = lambda c: (c + 3) // 4  # noqa: E731
    return (tok(read) * 0.5 + tok(write) * 10.0 + out * 100.0) / 1e6


def test_a_stride_is_written_the_requests_after_it_read_and_the_lifetime_is_kept() -> None:
    e = Elider(CONFIG)
    bodies = [{"system": "s", "tools": [], "messages": e.apply(_conversation(n)).messages}
              for n in (11, 12, 13, 14)]  # 23 messages: boundary 0; 25 on: 16  # fmt: skip
    times = [0.0, 10.0, 20.0, 20.0 + 301.0]
    r = replay(bodies, [_sent(b, t) for b, t in zip(bodies, times, strict=True)], TABLE)
    sizes = list(map(_chars, bodies))
    first = sizes[0]
    # The stride: read up to the first newly stubbed message, the rest written.
    shared = sum(map(len, pieces(bodies[1])[:4]))  # system, tools, messages 0 and 1
    assert pieces(bodies[1])[:4] == pieces(bodies[0])[:4]
    assert pieces(bodies[1])[4] != pieces(bodies[0])[4]
    # After it: all of the stride's request read, the new messages written.
    # Past the lifetime: nothing read, all written.
    reads = [0, shared, sizes[1], 0]
    writes = [first, sizes[1] - shared, sizes[2] - sizes[1], sizes[3]]
    assert (r.read_chars, r.write_chars) == (sum(reads), sum(writes))
    assert r.breaks == 2  # the stride, then the lifetime
    want = sum(_usd(a, b) for a, b in zip(reads, writes, strict=True))
    assert r.cost == pytest.approx(want, rel=1e-12)


def test_an_hour_breakpoint_keeps_the_cache_past_five_minutes() -> None:
    msgs = _conversation(3)
    marked = [*msgs[:-1], {**msgs[-1], "content": [{**msgs[-1]["content"][0],
              "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]  # fmt: skip
    a = {"system": "s", "messages": marked}
    b = {"system": "s", "messages": [*marked, {"role": "assistant", "content": "ok"}]}
    r = replay([a, b], [_sent(a, 0.0), _sent(b, 1800.0)], TABLE)
    assert r.breaks == 0 and r.read_chars == _chars(a)
    plain = {"system": "s", "messages": msgs}
    later = {"system": "s", "messages": [*msgs, {"role": "assistant", "content": "ok"}]}
    r = replay([plain, later], [_sent(plain, 0.0), _sent(later, 301.0)], TABLE)
    assert r.breaks == 1 and r.read_chars == 0
    r = replay([plain, later], [_sent(plain, 0.0), _sent(later, 299.0)], TABLE)
    assert r.breaks == 0 and r.read_chars == _chars(plain)
