"""Which API a request speaks, and its body split into the parts the store shares.

A body is cut into the conversation (`messages`), the prompt shape (`system` + `tools`) and
the rest (`params`); the names each protocol gives those parts are in `LAYOUTS`, so a
request is rebuilt under its own keys. Pure functions.
"""

from __future__ import annotations

from typing import Any

# The layouts and the split live with the rebuild that reads them back (context/request_wire.py).
from ctxview.context.request_wire import (
    ANTHROPIC,
    CHAT,
    COUNT_TOKENS,
    LAYOUTS,
    OTHER,
    RESPONSES,
    Parts,
    held_upstream,
    join,
    recorded,
    split,
)

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "COUNT_TOKENS",
    "LAYOUTS",
    "OTHER",
    "RESPONSES",
    "Parts",
    "default_upstream",
    "detect",
    "held_upstream",
    "join",
    "recorded",
    "split",
    "streaming",
]  # fmt: skip

# The upstream a protocol goes to when `--upstream` names none.
ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com"


def detect(method: str, path: str) -> str:
    """The protocol of a request from its method and path (the query left out)."""
    if method != "POST":
        return OTHER
    p = path.rstrip("/")
    if p.endswith("/v1/messages/count_tokens"):
        return COUNT_TOKENS
    if p.endswith("/v1/messages"):
        return ANTHROPIC
    if p.endswith("/responses"):
        return RESPONSES
    if p.endswith("/chat/completions"):
        return CHAT
    return OTHER


def default_upstream(protocol: str, path: str) -> str:
    """Where a request goes without `--upstream`: Anthropic's API for Messages, OpenAI's for
    the rest (an unknown path is more often OpenAI-style: `/v1/models`, embeddings)."""
    if protocol in (ANTHROPIC, COUNT_TOKENS) or path.startswith("/v1/messages"):
        return ANTHROPIC_API
    return OPENAI_API


def streaming(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True
