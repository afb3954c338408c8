"""The context as sent, in pure pieces: how a message serialises, tokens, usage, the bill.

Words. A *message* of the context is one of:
  - `user`: a person's message (or, after a compaction, the text the harness inserted);
  - `assistant`: the model's text with the tool calls it made in that response;
  - `tool`: one tool result, the exact text the model is given (or its elision stub).
The context's serialised form is the messages' renderings joined with "\\n"; its size in
characters is what the threshold and every figure measure.

Tokens are estimated as characters / 4 (rounded up) wherever a provider's usage is not known.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ctxview.rules.config import Config

ROLES = ("user", "assistant", "tool")


def render_call(tool: str, args: str) -> str:
    """One call inside an assistant message: `call read {"path": "a.txt"}`."""
    return f"call {tool} {args}" if args else f"call {tool}"


def render(role: str, text: str, calls: list[str] | None = None) -> str:
    """One message as sent: `role: text`, then each call on its own line."""
    head = f"{role}: {text}" if text else f"{role}:"
    if calls:
        return head + "\n" + "\n".join(calls)
    return head


def rendered_size(role: str, text_chars: int, call_chars: int = 0) -> int:
    """`len(render(...))` without building it: the head, plus each call's line and its newline."""
    return len(role) + 1 + (1 + text_chars if text_chars else 0) + call_chars


def call_size(tool: str, args: str) -> int:
    """The characters one call adds to its assistant message, its newline included."""
    return 1 + len(render_call(tool, args))


def serialised_size(message_chars: int, messages: int) -> int:
    """The whole context's size: the messages' sizes and the newlines between them."""
    return message_chars + max(messages - 1, 0)


def estimate_tokens(chars: int) -> int:
    """Characters / 4, rounded up: the estimate used wherever no usage is known."""
    return (chars + 3) // 4


@dataclass(frozen=True)
class Usage:
    """One request's usage, normalised to Claude's additive counting: `input_tokens` excludes
    cache reads and writes, so the prompt is input + cache_read + cache_write."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_hit_ratio(self) -> float | None:
        """Cache reads over the whole prompt; None when the prompt is empty."""
        total = self.prompt_tokens
        return self.cache_read_tokens / total if total else None

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Usage | None:
        """From an event's `{"usage": {...}}`; None when it holds no usage."""
        if not isinstance(data, dict):
            return None
        keys = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        if not any(k in data for k in keys):
            return None
        return cls(*(_count(data.get(k)) for k in keys))


def subset_usage(input_tokens: int, cached_tokens: int, output_tokens: int) -> Usage:
    """OpenAI/Codex counting, where the input includes the cached tokens, made additive.
    OpenAI caches automatically and bills no cache write, so cache_write is 0."""
    cached = min(max(cached_tokens, 0), max(input_tokens, 0))
    return Usage(max(input_tokens, 0) - cached, max(output_tokens, 0), cached, 0)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def usage_of(data: str | None) -> Usage | None:
    """The usage on a message (or `usage`) event's data JSON, if any."""
    if not data:
        return None
    try:
        extra = json.loads(data)
    except ValueError:
        return None
    return Usage.from_dict(extra.get("usage")) if isinstance(extra, dict) else None


@dataclass(frozen=True)
class Rates:
    """What a token of each kind costs, in units of one uncached input token."""

    input: float = 1.0
    cache_write: float = 1.25
    cache_read: float = 0.1


def rates(config: Config, provider: str) -> Rates:
    """`cost.<provider>.input|cache_write|cache_read` from the config."""
    return Rates(
        float(config[f"cost.{provider}.input"]),
        float(config[f"cost.{provider}.cache_write"]),
        float(config[f"cost.{provider}.cache_read"]),
    )


def provider_of(source: str) -> str:
    """Which price list a session's source bills by: Codex sessions by OpenAI's, else Anthropic's."""
    return "openai" if source.startswith("codex") else "anthropic"


def bill(input_tokens: float, cache_write: float, cache_read: float, r: Rates) -> float:
    """input + 1.25 × cache write + 0.1 × cache read (Anthropic's rates; per provider in config)."""
    return r.input * input_tokens + r.cache_write * cache_write + r.cache_read * cache_read


def compact_due(tokens: int, above_tokens: int) -> bool:
    """`compaction.above_tokens` (0 = off): whether the context has passed it."""
    return above_tokens > 0 and tokens > above_tokens


# Prices: the dated table shipped in `prices.json`, a user's file over it (read at the edges,
# `commands/common.py`'s `price_table`); the same `Rates` and `bill` price a request.


@dataclass(frozen=True)
class Price:
    """One model's list prices, in USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    cache_write_1h: float | None = None

    @property
    def rates(self) -> Rates:
        """The same prices in units of one uncached input token (what `bill` takes)."""
        i = self.input or 1.0
        return Rates(1.0, self.cache_write / i, self.cache_read / i)


@dataclass(frozen=True)
class PriceTable:
    date: str
    models: dict[str, Price]

    def price(self, model: str | None) -> Price | None:
        """The longest key `model` starts with (a dated name finds its family), or None."""
        if not model:
            return None
        name = model.lower().removeprefix("anthropic/").removeprefix("openai/")
        best = max((k for k in self.models if name.startswith(k)), key=len, default=None)
        return self.models[best] if best is not None else None


def price_table(shipped: str, user: str | None = None) -> PriceTable:
    """The table from `prices.json`'s text, a user's file's models over it (same form)."""
    data = json.loads(shipped)
    models = {k.lower(): _price(v) for k, v in data["models"].items()}
    date = str(data.get("date", ""))
    if user:
        mine = json.loads(user)
        models.update({k.lower(): _price(v) for k, v in (mine.get("models") or {}).items()})
        date = f"{date}, with the user's prices of {mine.get('date', 'no date')}"
    return PriceTable(date, models)


def _price(v: dict[str, Any]) -> Price:
    i = float(v["input"])
    return Price(i, float(v["output"]), float(v.get("cache_write", i)),
                 float(v.get("cache_read", i)),
                 float(v["cache_write_1h"]) if "cache_write_1h" in v else None)  # fmt: skip


def cost(u: Usage, p: Price, cache_write_1h: int = 0) -> float:
    """What a request's usage cost, in USD: the prompt by `bill` at the model's rates, the
    output at its own price; `cache_write_1h` of the writes at the one-hour price."""
    prompt = bill(u.input_tokens, u.cache_write_tokens - cache_write_1h, u.cache_read_tokens,
                  p.rates) * p.input  # fmt: skip
    hour = cache_write_1h * (p.cache_write_1h if p.cache_write_1h is not None else p.cache_write)
    return (prompt + hour + u.output_tokens * p.output) / 1e6


def api_usage(usage: Any, protocol: str) -> tuple[Usage, int]:
    """A proxied answer's usage, any protocol, made additive; and how many of its cache writes
    are one-hour ones (Anthropic's `cache_creation.ephemeral_1h_input_tokens`)."""
    u = usage if isinstance(usage, dict) else {}

    def num(*keys: str) -> int:
        for k in keys:
            v: Any = u
            for part in k.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if isinstance(v, int | float) and not isinstance(v, bool):
                return int(v)
        return 0

    if protocol.startswith("openai"):
        return subset_usage(num("input_tokens", "prompt_tokens"),
                            num("input_tokens_details.cached_tokens",
                                "prompt_tokens_details.cached_tokens"),
                            num("output_tokens", "completion_tokens")), 0  # fmt: skip
    out = Usage(num("input_tokens"), num("output_tokens"), num("cache_read_input_tokens"),
                num("cache_creation_input_tokens"))  # fmt: skip
    return out, min(num("cache_creation.ephemeral_1h_input_tokens"), out.cache_write_tokens)
