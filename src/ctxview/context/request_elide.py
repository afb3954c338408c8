"""Long-session elision on a proxied Anthropic Messages request (`ctxview proxy --elide`).

lean-ctx's session elision, with ctxview's own rules (`rules/elide.py`, the ones
`context/state.py` applies to a session's events): once the client's own messages serialise
(compact JSON) to more than `elide.threshold_chars`, every `tool_result` block in the messages
older than the live window whose text is longer than `elide.min_chars` is sent as a one-line
stub. The window is `elide.boundary`: it advances only in whole strides of `elide.stride`
messages and keeps at least `elide.keep`, so the cached prefix breaks once per stride. The stub
is a function of the block's text (its id is `elide.content_id` of it), so a block elided once
leaves with the same bytes on every later request. It applies to every request of a
conversation that crossed, the person's prompt turns included; a conversation is known by its
first message, so a compaction (a new first message) or a side request starts afresh.

Only a block whose content is a string or a single text block is elided (what Claude Code
sends); `unelide` puts the text back exactly, which is how a session's cost without elision is
replayed. Pure: the running state is `Elider`'s few sets, the texts go to the caller to store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxview.context.requests import digest
from ctxview.rules import elide as rules
from ctxview.rules.config import Config

RECALL_TOOL = "mcp__ctxview__recall"
# How every stub opens: `[#<id> elided: ` (what `is_stub` recognises).
_STUB = re.compile(r"\[#([0-9a-f]+) elided: [0-9,]+ chars of ")


def messages_size(messages: list[Any]) -> int:
    """The client's messages serialised as compact JSON, in characters: what the threshold
    reads (they only grow within a conversation, so a conversation that crossed stays across)."""
    return len(json.dumps(messages, ensure_ascii=False, separators=(",", ":")))


def block_text(block: Any) -> str | None:
    """A tool_result's text when its content is a string or one text block; else None."""
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return None
    c = block.get("content")
    if isinstance(c, str):
        return c
    if (isinstance(c, list) and len(c) == 1 and isinstance(c[0], dict)
            and c[0].get("type") == "text" and set(c[0]) <= {"type", "text"}
            and isinstance(c[0].get("text"), str)):  # fmt: skip
        return str(c[0]["text"])
    return None


def _with_text(block: dict[str, Any], text: str) -> dict[str, Any]:
    """The block with its text replaced, in the form it came in."""
    c = block.get("content")
    return {**block, "content": text if isinstance(c, str) else [{"type": "text", "text": text}]}


def stub_id(text: str) -> int | None:
    """The id a stub names, or None when `text` is not a stub."""
    m = _STUB.match(text)
    return int(m.group(1), 16) if m and text.endswith("]") and "\n" not in text else None


def message_is_elided(message: Any) -> bool:
    """Whether `message` carries a tool result sent as an elision stub."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return False
    return any((t := block_text(b)) is not None and stub_id(t) is not None for b in content)


def tool_names(messages: list[Any]) -> dict[str, str]:
    """tool_use id -> tool name, from the assistant messages' tool_use blocks."""
    names: dict[str, str] = {}
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_use" and "id" in b:
                    names[str(b["id"])] = str(b.get("name") or "tool")
    return names


def has_recall(tools: Any) -> bool:
    """Whether the request offers ctxview's MCP recall tool (then the stub names it)."""
    return isinstance(tools, list) and any(
        isinstance(t, dict) and t.get("name") == RECALL_TOOL for t in tools
    )


@dataclass
class Elided:
    """What `Elider.apply` did to one request."""

    messages: list[Any]  # the messages as they are forwarded
    crossed: bool
    boundary: int  # messages older than the live window (0 below the threshold)
    texts: dict[int, str] = field(default_factory=dict)  # id -> text, every block elided
    size: int = 0  # the client's messages' size, before elision


def elide_messages(messages: list[Any], boundary: int, mcp: bool,
                   config: Config) -> tuple[list[Any], dict[int, str]]:  # fmt: skip
    """The messages with every long tool result before `boundary` as its stub (pure)."""
    min_chars = int(config["elide.min_chars"])
    names: dict[str, str] | None = None
    out = list(messages)
    texts: dict[int, str] = {}
    for i in range(min(boundary, len(messages))):
        m = messages[i]
        content = m.get("content") if isinstance(m, dict) else None
        if not isinstance(content, list):
            continue
        new_content: list[Any] | None = None
        for j, b in enumerate(content):
            text = block_text(b)
            if text is None or len(text) <= min_chars or stub_id(text) is not None:
                continue
            if names is None:
                names = tool_names(messages)
            stub = rules.request_stub(text, names.get(str(b.get("tool_use_id"))), mcp, config)
            if not rules.elidable(len(text), min_chars, len(stub)):
                continue
            if new_content is None:
                new_content = list(content)
            new_content[j] = _with_text(b, stub)
            texts[rules.content_id(text)] = text
        if new_content is not None:
            out[i] = {**m, "content": new_content}
    return out, texts


class Elider:
    """Elision over the requests of one session, in order. Its state is which conversations
    (known by the digest of their first message) crossed the threshold, and whether ctxview's
    recall tool was offered when each crossed (fixed then, so the stubs never change)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.threshold = int(config["elide.threshold_chars"])
        self.keep = int(config["elide.keep"])
        self.stride = int(config["elide.stride"])
        self.crossed: dict[str, bool] = {}  # conversation -> mcp

    def apply(self, messages: list[Any], tools: Any = None) -> Elided:
        if not messages:
            return Elided(messages, False, 0)
        root = digest(messages[0])
        size = 0
        if root not in self.crossed:
            size = messages_size(messages)
            if not rules.crossed(size, self.threshold):
                return Elided(messages, False, 0, size=size)
            self.crossed[root] = has_recall(tools)
        b = rules.boundary(len(messages), self.keep, self.stride)
        out, texts = elide_messages(messages, b, self.crossed[root], self.config)
        return Elided(out, True, b, texts, size)


def unelide(messages: list[Any], texts: Mapping[int, str]) -> list[Any]:
    """`elide_messages` undone: every stub whose id is in `texts` back to its text."""
    out = list(messages)
    for i, m in enumerate(messages):
        content = m.get("content") if isinstance(m, dict) else None
        if not isinstance(content, list):
            continue
        new_content: list[Any] | None = None
        for j, b in enumerate(content):
            text = block_text(b)
            rid = stub_id(text) if text is not None else None
            if rid is None or rid not in texts:
                continue
            if new_content is None:
                new_content = list(content)
            new_content[j] = _with_text(b, texts[rid])
        if new_content is not None:
            out[i] = {**m, "content": new_content}
    return out
