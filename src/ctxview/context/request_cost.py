"""A session's recorded requests priced: each by its own usage at the table's prices
(`rules/as_sent.py`: `Price`, `cost`), and two replays priced the same way, with and without
elision, so an elided session says what it would have cost without it.

A replay prices what a request sends under the prompt-cache model of `context/state.py`: the
system prompt, the tools and each message are the pieces of a prefix; a request reads from the
cache the pieces it shares with the request before it (none once the cache's lifetime passed,
`request_diff.lifetime`), writes the rest, tokens estimated as characters / 4; the output is
the recorded one in both replays. The replay without elision puts every stub's text back
(`request_elide.unelide`, the texts the proxy stored); the replay with it runs the proxy's own
`Elider` over those, so `ctxview stats` and `ctxview proxy --elide` agree byte for byte. A
Responses request that continues a stored response carries only its new items: a replay prices
the whole context the upstream ran it on (`whole`), rebuilt from the chain's own records."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ctxview.context.request_diff import CONVERSATION_KEYS, conversation, lifetime, system_of
from ctxview.context.request_elide import Elider, stub_ids_in, unelide
from ctxview.context.request_wire import RESPONSES, held_upstream
from ctxview.rules.as_sent import (
    Price,
    PriceTable,
    Usage,
    api_usage,
    cost,
    estimate_tokens,
    price_table,
)
from ctxview.rules.config import Config


def user_prices_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ctxview" / "prices.json"


def load_prices(user: Path | None = None) -> PriceTable:
    """The shipped table, the user's file over it when there is one."""
    shipped = resources.files("ctxview.rules").joinpath("prices.json").read_text("utf-8")
    path = user or user_prices_path()
    try:
        mine: str | None = path.read_text("utf-8")
    except OSError:
        mine = None
    return price_table(shipped, mine)


@dataclass
class Sent:
    """One recorded request, as a replay needs it."""

    body: Any
    ts: float | None
    model: str | None
    protocol: str
    usage: Any  # the answer's usage as the API gave it
    answer: Any = None  # the reassembled answer (a Responses one's id and output: `whole`)


def _piece(value: Any) -> str:
    # Keys sorted: the API renders a block the same whatever order its keys came in.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def pieces(body: Any) -> list[str]:
    """The prefix's pieces: system, tools, then each message, serialised."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return [_piece(system_of(body)), _piece(tools), *map(_piece, conversation(body))]


@dataclass
class Replay:
    """One replay over a session: what it would cost, and how often the cache broke."""

    requests: int = 0
    sent_chars: int = 0
    read_chars: int = 0
    write_chars: int = 0
    breaks: int = 0  # requests after the first that could not read all of the previous one
    cost: float = 0.0  # USD, the priced requests only
    unpriced: int = 0


def replay(bodies: list[Any], sent: list[Sent], table: PriceTable) -> Replay:
    r = Replay()
    prev: list[str] | None = None
    prev_ts: float | None = None
    prev_body: Any = None
    for body, s in zip(bodies, sent, strict=True):
        cur = pieces(body)
        size = sum(map(len, cur))
        read = 0
        expired = (prev_ts is not None and s.ts is not None
                   and s.ts - prev_ts > lifetime(prev_body))  # fmt: skip
        if prev is not None and not expired:
            for a, b in zip(prev, cur, strict=False):
                if a != b:
                    break
                read += len(a)
        if prev is not None and read < sum(map(len, prev)):
            r.breaks += 1
        r.requests += 1
        r.sent_chars += size
        r.read_chars += read
        r.write_chars += size - read
        price = table.price(s.model)
        if price is None:
            r.unpriced += 1
        else:
            out = api_usage(s.usage, s.protocol)[0].output_tokens
            u = Usage(0, out, estimate_tokens(read), estimate_tokens(size - read))
            r.cost += cost(u, price)
        prev, prev_ts, prev_body = cur, s.ts, body
    return r


def billed(s: Sent, table: PriceTable) -> float | None:
    """The request's cost by its own usage, or None when its model has no price."""
    price: Price | None = table.price(s.model)
    if price is None or s.usage is None:
        return None
    u, hour = api_usage(s.usage, s.protocol)
    return cost(u, price, hour)


def stub_ids(bodies: list[Any]) -> list[int]:
    """Every id a stub in these bodies names (the texts a replay without elision needs)."""
    out: set[int] = set()
    for body in bodies:
        out |= stub_ids_in(conversation(body))
    return sorted(out)


def _conversation_key(body: Any) -> str | None:
    """The key of the body's conversation (`messages`; a Responses body's `input`)."""
    if not isinstance(body, dict):
        return None
    return next((k for k in CONVERSATION_KEYS if isinstance(body.get(k), list)), None)


def _with_messages(body: Any, messages: list[Any]) -> Any:
    key = _conversation_key(body)
    if key is None:
        return body
    return {k: messages if k == key else v for k, v in body.items()}


def unelided(bodies: list[Any], texts: dict[int, str]) -> list[Any]:
    """The bodies as the client sent them, every stub's text put back."""
    return [_with_messages(b, unelide(conversation(b), texts)) if texts else b for b in bodies]


def whole(bodies: list[Any], sent: list[Sent]) -> list[Any]:
    """Each Responses request that continues a stored response (`previous_response_id`) as the
    context the upstream ran it on: the whole context of the response it continues, that
    response's output, then the request's own input. The proxy saw every link of a chain it
    recorded from its start; a request continuing one it did not see stays as it is. A string
    `input` counts as the one user message it stands for."""
    contexts: dict[str, list[Any]] = {}  # response id -> its whole context and output
    out = []
    for b, s in zip(bodies, sent, strict=True):
        if s.protocol != RESPONSES or not isinstance(b, dict):
            out.append(b)
            continue
        items = b.get("input")
        mine = ([{"role": "user", "content": items}] if isinstance(items, str)
                else list(items) if isinstance(items, list) else [])  # fmt: skip
        prev = b.get("previous_response_id")
        full = [*contexts[prev], *mine] if isinstance(prev, str) and prev in contexts else None
        a = s.answer if isinstance(s.answer, dict) else {}
        output = a.get("output")
        if isinstance(a.get("id"), str):
            contexts[a["id"]] = [*(mine if full is None else full),
                                 *(output if isinstance(output, list) else [])]  # fmt: skip
        if full is None and isinstance(items, str):
            full = mine  # the short form (a string input) is the one message it stands for
        out.append(b if full is None else {**b, "input": full})
    return out


def elided(bodies: list[Any], config: Config, protocols: list[str] | None = None) -> list[Any]:
    """The bodies as `--elide` forwards them: the proxy's `Elider` over the session in order
    (any protocol: the conversation is the body's `messages` or `input`); a request whose
    conversation the upstream keeps goes as it came, as the proxy sends it."""
    e = Elider(config)
    out = []
    for i, b in enumerate(bodies):
        if protocols is not None and held_upstream(protocols[i], b):
            out.append(b)
        elif _conversation_key(b) is not None:
            out.append(_with_messages(b, e.apply(conversation(b), b.get("tools")).messages))
        else:
            out.append(b)
    return out


@dataclass
class SessionCost:
    requests: int
    billed: list[float | None]  # per request, by its own usage
    total: float  # the priced requests' sum
    unpriced: int
    was_elided: bool
    with_elision: Replay
    without_elision: Replay
    prices_date: str
    stubs: int = 0
    missing_texts: int = 0  # stubs whose text is not in the store (replayed as stubs)
    elided_bodies: list[Any] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        w = self.without_elision.cost
        return self.with_elision.cost / w if w else None

    def as_json(self) -> dict[str, Any]:
        def rep(r: Replay) -> dict[str, Any]:
            return {"requests": r.requests, "sent_chars": r.sent_chars, "cache_read_chars":
                    r.read_chars, "cache_write_chars": r.write_chars, "cache_breaks": r.breaks,
                    "cost_usd": round(r.cost, 6)}  # fmt: skip

        return {
            "requests": self.requests, "cost_usd": round(self.total, 6),
            "per_request_usd": [None if c is None else round(c, 6) for c in self.billed],
            "unpriced": self.unpriced, "elided": self.was_elided, "stubs": self.stubs,
            "missing_texts": self.missing_texts, "prices": self.prices_date,
            "replay_with_elision": rep(self.with_elision),
            "replay_without_elision": rep(self.without_elision),
            "elision_ratio": None if self.ratio is None else round(self.ratio, 4),
        }  # fmt: skip


def session_cost(sent: list[Sent], texts: dict[int, str], table: PriceTable,
                 config: Config) -> SessionCost:  # fmt: skip
    """`sent` as recorded (maybe elided), `texts` the stored texts of its stubs."""
    bodies = [s.body for s in sent]
    ids = stub_ids(bodies)
    plain = unelided(bodies, texts)
    with_e = elided(plain, config, [s.protocol for s in sent])
    per = [billed(s, table) for s in sent]
    return SessionCost(
        requests=len(sent), billed=per, total=sum(c for c in per if c is not None),
        unpriced=sum(c is None for c in per), was_elided=bool(ids),
        with_elision=replay(whole(with_e, sent), sent, table),
        without_elision=replay(whole(plain, sent), sent, table),
        prices_date=table.date, stubs=len(ids), missing_texts=sum(i not in texts for i in ids),
        elided_bodies=with_e,
    )  # fmt: skip
