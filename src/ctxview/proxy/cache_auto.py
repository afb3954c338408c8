"""`--cache auto`: team-harness's `prompt_cache="auto"` on an Anthropic Messages request.

A request that carries no `cache_control` anywhere gets two breakpoints: on the system prompt
(its last block) and on the latest message boundary (the last block of the last message), so
the next request reads everything up to there from the cache. A request with a mark of its own
is left alone: the client already chose. Pure."""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
# Blocks the API lets carry a breakpoint (thinking blocks may not).
_MARKABLE = frozenset({"text", "image", "document", "tool_use", "tool_result", "search_result"})


def has_marks(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(has_marks(v) for v in value.values())
    if isinstance(value, list):
        return any(has_marks(v) for v in value)
    return False


def _marked_content(content: Any) -> Any | None:
    """`content` with a breakpoint on its last markable block, or None when it has none."""
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}] if content \
            else None  # fmt: skip
    if isinstance(content, list) and content:
        last = content[-1]
        if isinstance(last, dict) and last.get("type") in _MARKABLE:
            return [*content[:-1], {**last, "cache_control": dict(EPHEMERAL)}]
    return None


def auto(body: Any) -> Any:
    """The body with the two breakpoints, or the same object when it gets none."""
    if not isinstance(body, dict) or has_marks(body):
        return body
    out = dict(body)
    changed = False
    system = _marked_content(body.get("system")) if "system" in body else None
    if system is not None:
        out["system"], changed = system, True
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        content = _marked_content(messages[-1].get("content"))
        if content is not None:
            out["messages"] = [*messages[:-1], {**messages[-1], "content": content}]
            changed = True
    return out if changed else body
