"""A proxied request's body exactly as the upstream received it, rebuilt from the store's rows;
and the split of a body into the parts the store shares (`split`, `join`). Pure: the proxy
(`proxy/record.py`) splits and checks with these before it writes, the viewer and the commands
rebuild with the same code.

A body is cut into the conversation (`messages`), the prompt shape (`system` + `tools`) and
the rest (`params`); the names each protocol gives those parts are in `LAYOUTS`, so a request
is rebuilt under its own keys. What canonical form loses (a content sent as a string or as a
one-block list, a message that still differs) is in the record's `layout`."""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from typing import Any

from ctxview.context.requests import RecordedRequest
from ctxview.store.proxy_records import ProxyRow

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


def held_upstream(protocol: str, body: Any) -> bool:
    """Whether a request's conversation is kept by the upstream and the request carries only its
    new items: a Responses request continuing a stored response (`previous_response_id`) or a
    stored conversation (`conversation`)."""
    return (protocol == RESPONSES and isinstance(body, dict)
            and bool(body.get("previous_response_id") or body.get("conversation")))  # fmt: skip


def split(protocol: str, body: Any) -> Parts | None:
    """The parts of a JSON body of `protocol`, or None when it is not an object of that shape
    (then it is recorded as unparsed). A part of an unexpected type stays in `params`."""
    layout = LAYOUTS.get(protocol)
    if layout is None or not isinstance(body, dict):
        return None
    mkey, skey = layout
    params = dict(body)
    got: Any = params.get(mkey)
    has_messages = isinstance(got, list) and all(isinstance(m, dict) for m in got)
    messages: list[dict[str, Any]] = []
    if has_messages:
        messages = got
        del params[mkey]
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


def header(pairs: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in pairs if k.lower() == name), "")


def decode_body(raw: bytes, encoding: str) -> bytes | None:
    enc = encoding.strip().lower()
    try:
        if enc in ("", "identity"):
            return raw
        if enc in ("gzip", "x-gzip"):
            return gzip.decompress(raw)
        if enc == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS)
    except (OSError, EOFError, zlib.error):
        return None
    return None


def apply_forms(messages: list[dict[str, Any]], layout: dict[str, Any]) -> list[dict[str, Any]]:
    forms: dict[str, str] = layout.get("forms") or {}
    patch: dict[str, Any] = layout.get("patch") or {}
    out = []
    for i, m in enumerate(messages):
        key = str(i)
        if key in patch:
            out.append(patch[key])
            continue
        form = forms.get(key)
        c = m.get("content")
        if form == "s" and isinstance(c, list) and len(c) == 1 and isinstance(c[0], dict):
            m = {**m, "content": c[0].get("text", "")}
        elif form == "l" and isinstance(c, str):
            m = {**m, "content": [{"type": "text", "text": c}]}
        out.append(m)
    return out


def assemble(protocol: str, layout: dict[str, Any], shaped: dict[str, Any],
             params: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The body as forwarded from `context.requests.build`'s `{system, tools, messages}`."""
    has = layout.get("has") or [True, True, True]
    parts = Parts(
        messages=apply_forms(shaped["messages"], layout), system=shaped["system"],
        tools=shaped["tools"], params=params, has_system=bool(has[0]), has_tools=bool(has[1]),
        has_messages=bool(has[2]))  # fmt: skip
    return join(protocol, parts)


def rebuild(row: ProxyRow, request: RecordedRequest | None) -> Any:
    """The body the upstream received, from the stored rows (None: not JSON; see body_raw)."""
    if row.body_raw is not None:
        raw = decode_body(bytes(row.body_raw), header(
            [(k, v) for k, v in json.loads(row.request_headers)], "content-encoding"))  # fmt: skip
        try:
            return json.loads(raw) if raw else None
        except (ValueError, RecursionError):
            return None
    if request is None or row.layout is None:
        return None
    return assemble(row.protocol, json.loads(row.layout), request.body, request.params)


@dataclass
class Forwarded:
    """A proxied request the model answers, its body as the upstream received it."""

    row: ProxyRow
    body: Any  # the JSON as forwarded; None when it was not JSON
    text: str | None  # then the body's bytes as text

    @property
    def usage(self) -> Any:
        return json.loads(self.row.usage) if self.row.usage else None


def forwarded(rows: list[ProxyRow], requests: list[RecordedRequest]) -> list[Forwarded]:
    """The session's proxied requests to the model (token counts and other paths left out), in
    order, each body rebuilt exactly."""
    by_id = {r.id: r for r in requests}
    out = []
    for row in rows:
        if not recorded(row.protocol):
            continue
        body = rebuild(row, by_id.get(row.request_id))
        text = None
        if body is None and row.body_raw is not None:
            text = bytes(row.body_raw).decode("utf-8", "replace")
        out.append(Forwarded(row, body, text))
    return out
