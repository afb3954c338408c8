"""Which API a request speaks, and its body split into the parts the store shares.

A body is cut into the conversation (`messages`), the prompt shape (`system` + `tools`) and
the rest (`params`); the names each protocol gives those parts are in `LAYOUTS`, so a
request is rebuilt under its own keys. Pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ANTHROPIC = "anthropic-messages"
COUNT_TOKENS = "anthropic-count-tokens"
RESPONSES = "openai-responses"
CHAT = "openai-chat"
OTHER = "other"

# protocol -> (the key of its messages, the key of its system prompt or None)
LAYOUTS: dict[str, tuple[str, str | None]] = {
    ANTHROPIC: ("messages", "system"),
    COUNT_TOKENS: ("messages", "system"),
    RESPONSES: ("input", "instructions"),
    CHAT: ("messages", None),
}

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


def recorded(protocol: str) -> bool:
    """Whether requests of `protocol` join the session's request records (what the model
    answers); a token count is kept in the proxy's own log only."""
    return protocol in (ANTHROPIC, RESPONSES, CHAT)


@dataclass
class Parts:
    """A body split: `system` and `tools` are None when the body has no such key."""

    messages: list[dict[str, Any]]
    system: Any
    tools: Any
    params: dict[str, Any]
    has_system: bool
    has_tools: bool
    has_messages: bool


def split(protocol: str, body: Any) -> Parts | None:
    """The parts of a JSON body of `protocol`, or None when it is not an object of that shape
    (then it is recorded as unparsed). A part of an unexpected type stays in `params`."""
    layout = LAYOUTS.get(protocol)
    if layout is None or not isinstance(body, dict):
        return None
    mkey, skey = layout
    params = dict(body)
    messages = params.get(mkey)
    has_messages = isinstance(messages, list) and all(isinstance(m, dict) for m in messages)
    if has_messages:
        del params[mkey]
    else:
        messages = []
    has_system = skey is not None and skey in params
    system = params.pop(skey) if has_system and skey is not None else None
    tools = params.get("tools")
    has_tools = isinstance(tools, list)
    if has_tools:
        del params["tools"]
    else:
        tools = None
    return Parts(messages, system, tools, params, has_system, has_tools, has_messages)


def join(protocol: str, parts: Parts) -> dict[str, Any]:
    """`split`'s inverse."""
    mkey, skey = LAYOUTS[protocol]
    body = dict(parts.params)
    if parts.has_system and skey is not None:
        body[skey] = parts.system
    if parts.has_tools:
        body["tools"] = parts.tools
    if parts.has_messages:
        body[mkey] = parts.messages
    return body


def streaming(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True
