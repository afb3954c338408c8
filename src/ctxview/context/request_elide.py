"""Long-session elision on a proxied request (`ctxview proxy --elide`): Anthropic Messages,
OpenAI Responses and OpenAI Chat Completions, with one rule.

lean-ctx's session elision, with ctxview's own rules (`rules/elide.py`, the ones
`context/state.py` applies to a session's events): once the client's own conversation
serialises (compact JSON) to more than `elide.threshold_chars`, every tool result in it older
than the live window whose text is longer than `elide.min_chars` is sent as a one-line stub.
The window is `elide.boundary`: it advances only in whole strides of `elide.stride` entries of
the conversation and keeps at least `elide.keep`, so the cached prefix breaks once per stride.
The stub is a function of the result's text (its id is `elide.content_id` of it), so a result
elided once leaves with the same bytes on every later request. It applies to every request of a
conversation that crossed, the person's prompt turns included; a conversation is known by its
first entry, so a compaction (a new first entry, or fewer entries than the request before) or a
side request starts afresh.

The rule's units are the seed's, Anthropic's: the conversation is `messages`, a tool result is a
`tool_result` block inside a user message. The OpenAI protocols map onto them one to one:
- Responses: the conversation is `input`, one entry per item; a tool result is a whole
  `function_call_output` (or `custom_tool_call_output`) item, its text in `output`, its tool
  named by the `function_call` item with the same `call_id`.
- Chat Completions: the conversation is `messages`; a tool result is a whole `role: "tool"`
  message, its text in `content`, its tool named by the assistant's `tool_calls` entry with the
  same id.
So a stride is 16 items (Responses) or 16 messages (Chat, Messages). The three shapes are
disjoint, so an entry is read by its own shape and the code needs no protocol.

A result's text is its string, or each bare text part of a list of parts (Codex sends an MCP
result as two); a part of any other kind (an image) stays as it is; `unelide` puts the text back exactly, which is how a session's cost without
elision is replayed. Pure: the running state is `Elider`'s few sets, the texts go to the
caller to store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxview.context.requests import digest
from ctxview.rules import elide as rules
from ctxview.rules.config import Config

RECALL_TOOL = "mcp__ctxview__recall"  # Claude Code's name for it, and older Codex's
# Codex 0.169 offers an MCP server's tools inside one `namespace` tool, `mcp__<server>`.
RECALL_NAMESPACE = ("mcp__ctxview", "recall")
RECALL_IN_NAMESPACE = "the recall tool of mcp__ctxview"
# How every stub opens: `[#<id> elided: ` (what `is_stub` recognises).
_STUB = re.compile(r"\[#([0-9a-f]+) elided: [0-9,]+ chars of ")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")  # Responses' tool results
_CALLS = ("function_call", "custom_tool_call")
_TEXT_PARTS = ("text", "input_text", "output_text")


def messages_size(messages: list[Any]) -> int:
    """The client's conversation serialised as compact JSON, in characters: what the threshold
    reads (it only grows within a conversation, so a conversation that crossed stays across)."""
    return len(json.dumps(messages, ensure_ascii=False, separators=(",", ":")))


# Where a result's text is: (the block in an Anthropic message's content, or None for an entry
# that is itself the result; the text part in a list of parts, or None for a string).
Slot = tuple[int | None, int | None]


def _text_of(c: Any) -> str | None:
    """A string, or a list of one bare text part: the text; else None."""
    if isinstance(c, str):
        return c
    if isinstance(c, list) and len(c) == 1:
        return next((t for _, t in _texts_of(c)), None)
    return None


def _texts_of(c: Any) -> Iterator[tuple[int | None, str]]:
    """A result's texts: a string whole, or each bare text part of a list (an MCP result in
    Codex is two: Codex's own `Wall time: … Output:` line, then the tool's text)."""
    if isinstance(c, str):
        yield None, c
    elif isinstance(c, list):
        for k, p in enumerate(c):
            if (isinstance(p, dict) and p.get("type") in _TEXT_PARTS
                    and set(p) <= {"type", "text"} and isinstance(p.get("text"), str)):  # fmt: skip
                yield k, str(p["text"])


def _replaced(c: Any, k: int | None, text: str) -> Any:
    """`c` with its text (part `k`) replaced, in the form it came in."""
    if k is None:
        return text
    out = list(c)
    out[k] = {**c[k], "text": text}
    return out


def block_text(block: Any) -> str | None:
    """A tool_result block's text when its content is a string or one text block; else None."""
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return None
    return _text_of(block.get("content"))


def _whole_key(entry: dict[str, Any]) -> str | None:
    """Where an entry that is itself a tool result (Responses' output item, Chat's tool
    message) keeps its text; None for any other entry."""
    if entry.get("type") in _OUTPUTS:
        return "output"
    if entry.get("role") == "tool" and "type" not in entry:
        return "content"
    return None


def results(entry: Any) -> Iterator[tuple[Slot, str, str | None]]:
    """The tool results' texts an entry of the conversation carries, as (slot, text, call
    id)."""
    if not isinstance(entry, dict):
        return
    key = _whole_key(entry)
    if key is not None:
        call = entry.get("call_id") if key == "output" else entry.get("tool_call_id")
        for k, text in _texts_of(entry.get(key)):
            yield (None, k), text, None if call is None else str(call)
        return
    content = entry.get("content")
    if isinstance(content, list):
        for j, b in enumerate(content):
            if isinstance(b, dict) and b.get("type") == "tool_result":
                call = b.get("tool_use_id")
                for k, text in _texts_of(b.get("content")):
                    yield (j, k), text, None if call is None else str(call)


def _with_texts(entry: dict[str, Any], texts: dict[Slot, str]) -> dict[str, Any]:
    """The entry with the texts in these slots replaced, each in the form it came in."""
    key = _whole_key(entry)
    if key is not None:
        c = entry[key]
        for (_, k), text in texts.items():
            c = _replaced(c, k, text)
        return {**entry, key: c}
    content = list(entry["content"])
    for (j, k), text in texts.items():
        assert j is not None
        b = content[j]
        content[j] = {**b, "content": _replaced(b["content"], k, text)}
    return {**entry, "content": content}


def stub_id(text: str) -> int | None:
    """The id a stub names, or None when `text` is not a stub."""
    m = _STUB.match(text)
    return int(m.group(1), 16) if m and text.endswith("]") and "\n" not in text else None


def message_is_elided(message: Any) -> bool:
    """Whether `message` (an entry of the conversation) carries a tool result sent as a stub."""
    return any(stub_id(text) is not None for _, text, _ in results(message))


def stub_ids_in(messages: list[Any]) -> set[int]:
    """Every id a stub in the conversation names."""
    return {rid for m in messages for _, t, _ in results(m) if (rid := stub_id(t)) is not None}


def tool_names(messages: list[Any]) -> dict[str, str]:
    """call id -> tool name: Anthropic's tool_use blocks, Responses' function_call items,
    Chat's assistant `tool_calls`."""
    names: dict[str, str] = {}
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("type") in _CALLS and "call_id" in m:
            names[str(m["call_id"])] = str(m.get("name") or "tool")
        calls = m.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and "id" in call:
                names[str(call["id"])] = str(fn.get("name") or "tool")
        content = m.get("content")
        if isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_use" and "id" in b:
                    names[str(b["id"])] = str(b.get("name") or "tool")
    return names


def recall_tool(tools: Any) -> str | None:
    """How the request's client names ctxview's MCP recall tool, or None when it offers none
    (then the stub says to run `ctxview recall` through the shell). Claude Code, and Chat
    clients, flatten it to `mcp__ctxview__recall`; Codex 0.169 (`ctxview install codex`) offers
    it as `recall` inside its `mcp__ctxview` namespace."""
    if not isinstance(tools, list):
        return None
    space, inner = RECALL_NAMESPACE
    for t in tools:
        if not isinstance(t, dict):
            continue
        fn = t.get("function")
        name = fn.get("name") if isinstance(fn, dict) else t.get("name")
        if name == RECALL_TOOL:
            return RECALL_TOOL
        if (
            t.get("type") == "namespace"
            and name == space
            and any(isinstance(x, dict) and x.get("name") == inner for x in t.get("tools") or [])
        ):
            return RECALL_IN_NAMESPACE
    return None


def has_recall(tools: Any) -> bool:
    """Whether the request offers ctxview's MCP recall tool (then the stub names it)."""
    return recall_tool(tools) is not None


@dataclass
class Elided:
    """What `Elider.apply` did to one request."""

    messages: list[Any]  # the conversation as it is forwarded
    crossed: bool
    boundary: int  # entries older than the live window (0 below the threshold)
    texts: dict[int, str] = field(default_factory=dict)  # id -> text, every result elided
    size: int = 0  # the client's conversation's size, before elision


def elide_messages(messages: list[Any], boundary: int, recall: str | None,
                   config: Config) -> tuple[list[Any], dict[int, str]]:  # fmt: skip
    """The conversation with every long tool result before `boundary` as its stub (pure)."""
    min_chars = int(config["elide.min_chars"])
    names: dict[str, str] | None = None
    out = list(messages)
    texts: dict[int, str] = {}
    for i in range(min(boundary, len(messages))):
        m = messages[i]
        new: dict[Slot, str] = {}
        for slot, text, call in results(m):
            if len(text) <= min_chars or stub_id(text) is not None:
                continue
            if names is None:
                names = tool_names(messages)
            stub = rules.request_stub(text, names.get(call or ""), recall, config)
            if not rules.elidable(len(text), min_chars, len(stub)):
                continue
            new[slot] = stub
            texts[rules.content_id(text)] = text
        if new:
            out[i] = _with_texts(m, new)
    return out, texts


@dataclass
class _Conversation:
    recall: str | None  # how ctxview's recall tool was offered when it first crossed
    entries: int  # how many entries its latest request had
    crossed: bool = True


class Elider:
    """Elision over the requests of one session, in order. Its state is, per conversation
    (known by the digest of its first entry), whether it crossed the threshold, how many entries
    its latest request had, and how ctxview's recall tool was offered when it first crossed
    (fixed then, so the stubs never change). A conversation's messages only grow between
    compactions, so one that crossed stays across while its requests do not shrink; a request
    with fewer entries than the one before it is the conversation rebuilt (a compaction that
    keeps the first entry, as Codex's does: its developer messages stay first), and the
    threshold reads it afresh, as the engine's compaction does (`context/state.py`)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.threshold = int(config["elide.threshold_chars"])
        self.keep = int(config["elide.keep"])
        self.stride = int(config["elide.stride"])
        self.conversations: dict[str, _Conversation] = {}

    def apply(self, messages: list[Any], tools: Any = None) -> Elided:
        if not messages:
            return Elided(messages, False, 0)
        conv = self.conversations.get(digest(messages[0]))
        size = 0
        if conv is None or not conv.crossed or len(messages) < conv.entries:
            size = messages_size(messages)
            if not rules.crossed(size, self.threshold):
                if conv is not None:
                    conv.crossed, conv.entries = False, len(messages)
                return Elided(messages, False, 0, size=size)
            if conv is None:
                conv = self.conversations[digest(messages[0])] = _Conversation(
                    recall_tool(tools), len(messages))  # fmt: skip
            conv.crossed = True
        conv.entries = len(messages)
        b = rules.boundary(len(messages), self.keep, self.stride)
        out, texts = elide_messages(messages, b, conv.recall, self.config)
        return Elided(out, True, b, texts, size)


def unelide(messages: list[Any], texts: Mapping[int, str]) -> list[Any]:
    """`elide_messages` undone: every stub whose id is in `texts` back to its text."""
    out = list(messages)
    for i, m in enumerate(messages):
        new: dict[Slot, str] = {}
        for slot, text, _ in results(m):
            rid = stub_id(text)
            if rid is not None and rid in texts:
                new[slot] = texts[rid]
        if new:
            out[i] = _with_texts(m, new)
    return out
