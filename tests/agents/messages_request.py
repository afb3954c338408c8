"""What a Messages API request body (as fake_anthropic.py records it) gave the model: each tool
result's exact text and the text blocks, for the agents that speak that API (Claude Code, and
OpenCode and pi through their Anthropic providers)."""

from __future__ import annotations

from typing import Any


def result_text(block: dict[str, Any]) -> str:
    """A `tool_result` block's text: its string content, or its text parts joined by lines."""
    c = block.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(x.get("text", "") for x in c or [] if isinstance(x, dict))


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_use_id -> the exact text the model got for it, in one Messages API request."""
    out: dict[str, str] = {}
    for m in body.get("messages", []):
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out[b["tool_use_id"]] = result_text(b)
    return out


def texts(body: dict[str, Any]) -> list[str]:
    """Every text block of a request's messages, in order (a message that is one string counts
    as one)."""
    out: list[str] = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return out
