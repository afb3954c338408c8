"""A session's requests as the model was sent them, for the viewer's `x` and `d` screens: the
proxy's records when `ctxview proxy` carried the session (each body exactly as forwarded, any
protocol), else Claude Code's own record from its transcript; [] when there is neither."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ctxview.context.request_wire import ANTHROPIC, forwarded
from ctxview.context.requests import RecordedRequest, canonical_json, rebuild_stored, render_request
from ctxview.context.requests import _block_text as block_text
from ctxview.rules.as_sent import Usage, api_usage
from ctxview.store import Reader


@dataclass
class SentRequest:
    """One request as sent, whichever record it comes from."""

    body: Any  # the JSON body (Claude Code's record: `{system, tools, messages}`); None: not JSON
    ts: float | None
    usage: Any  # the answer's usage as the API gave it, or None
    protocol: str
    source: str  # "proxy" | "claude-code"
    exact: bool  # the body is whole (Claude Code's record can miss a message)
    raw: str | None = None  # a body that was not JSON, as text
    status: int | None = None
    body_bytes: int | None = None
    recorded: RecordedRequest | None = None

    def real_usage(self) -> Usage | None:
        """The answer's own usage, any protocol, in Claude's additive counting; None if none."""
        return api_usage(self.usage, self.protocol)[0] if isinstance(self.usage, dict) else None

    def messages(self) -> list[Any]:
        m = self.body.get(conversation_key(self.protocol)) if isinstance(self.body, dict) else None
        return m if isinstance(m, list) else []


def usage_words(u: Usage | None) -> str:
    if u is None:
        return "no usage recorded"
    return (f"usage in {u.input_tokens:,} · cache read {u.cache_read_tokens:,} · "
            f"cache write {u.cache_write_tokens:,} · out {u.output_tokens:,}")  # fmt: skip


async def session_requests(reader: Reader, session_id: str) -> list[SentRequest]:
    rows = await reader.proxy_records(session_id)
    recorded = rebuild_stored(await reader.api_request_rows(session_id))
    proxied = forwarded(rows, recorded) if rows else []
    if proxied:
        return [SentRequest(f.body, f.row.started, f.usage, f.row.protocol, "proxy",
                            f.body is not None or f.text is not None, f.text, f.row.status,
                            f.row.body_bytes) for f in proxied]  # fmt: skip
    return [SentRequest(r.body, r.ts, r.usage, ANTHROPIC, "claude-code", r.exact, recorded=r)
            for r in recorded]  # fmt: skip


CACHE = "  ⟪cache breakpoint⟫"


def _mark(value: Any) -> str:
    return CACHE if isinstance(value, dict) and "cache_control" in value else ""


def item_text(block: Any) -> str:
    """A content block or input item in words: text as text, calls and results with their ids,
    anything else as its JSON."""
    if isinstance(block, dict) and block.get("type") in ("input_text", "output_text"):
        return str(block.get("text", ""))
    if isinstance(block, dict) and block.get("type") == "function_call_output":
        return f"[function_call_output {block.get('call_id')}]\n{block.get('output', '')}"
    return block_text(block)


def message_text(m: Any, i: int) -> str:
    """One message (or Responses input item) as `role [i]:` and its blocks, one a line."""
    if not isinstance(m, dict):
        return f"[{i}]: {canonical_json(m)}"
    role = m.get("role") or m.get("type") or "?"
    lines = [f"{role} [{i}]:" + _mark(m)]
    content = m.get("content")
    if isinstance(content, str):
        lines.append(content)
    elif isinstance(content, list):
        lines.extend(item_text(b) + _mark(b) for b in content)
    rest = {k: v for k, v in m.items() if k not in ("role", "content", "cache_control")}
    if "role" not in m:
        rest.pop("type", None)
    if rest and not isinstance(content, list | str):
        lines.append(canonical_json(rest))
    elif rest.get("tool_calls"):  # Chat Completions' calls beside the content
        lines.extend(f"[tool_call {c.get('id')}] {canonical_json(c.get('function'))}"
                     for c in rest["tool_calls"] if isinstance(c, dict))  # fmt: skip
    return "\n".join(lines)


def conversation_key(protocol: str) -> str:
    return "input" if protocol == "openai-responses" else "messages"


def render_sent(req: SentRequest) -> str:
    """A request as text, every part of it: the parameters (each as its JSON), the system prompt,
    each tool, then every message; a cache breakpoint marked where the client put it."""
    if req.recorded is not None:
        return render_request(req.recorded)
    if req.body is None:
        return req.raw if req.raw is not None else "(no body recorded)"
    body = req.body
    if not isinstance(body, dict):
        return json.dumps(body, ensure_ascii=False, indent=2)
    mkey = conversation_key(req.protocol)
    skey = {"anthropic-messages": "system", "openai-responses": "instructions"}.get(req.protocol)
    lines = []
    for k, v in body.items():
        if k not in (mkey, skey, "tools"):
            lines.append(f"{k}: {canonical_json(v)}")
    if skey and skey in body:
        system = body[skey]
        lines.append("")
        if isinstance(system, list):
            for i, b in enumerate(system):
                lines.append(f"{skey}[{i}]:" + _mark(b))
                lines.append(item_text(b))
        else:
            lines.append(f"{skey}:")
            lines.append(system if isinstance(system, str) else canonical_json(system))
    tools = body.get("tools")
    if isinstance(tools, list):
        lines.append("")
        lines.append(f"tools ({len(tools)}):")
        for t in tools:
            lines.append(canonical_json(t) + _mark(t))
    messages = body.get(mkey)
    for i, m in enumerate(messages if isinstance(messages, list) else []):
        lines.append("")
        lines.append(message_text(m, i))
    return "\n".join(lines)


def as_json(req: SentRequest) -> str:
    """The body exactly as forwarded, as indented JSON (what `j` shows)."""
    if req.body is None:
        return req.raw if req.raw is not None else ""
    return json.dumps(req.body, ensure_ascii=False, indent=2)
