"""A request to the model as ctxview stores it, rebuilt exactly: the shapes (system and tools)
and messages each stored once, a request naming them, and what a request weighs.

The wire rules were found by running the pinned Claude Code 2.1.328 against a scripted server
(tests/agents/test_claude_requests.py):

- a message's hash is SHA-256 of its canonical JSON (keys sorted, no spaces, UTF-8 as is) with
  every `cache_control` removed and a string `content` written as one text block;
- on the wire a user or system message whose content is one plain text block is a string;
  assistant messages keep their block list; `cacheControl` paths of `messages` are applied to
  that content (a string first becomes one text block);
- `system` as sent has one more block first, `x-anthropic-billing-header: …`, that the shape
  leaves out (its `cacheControl` paths count the shape's blocks);
- `requestDigest` is the hash of `{system, tools, messages}` merged with `params`, the messages
  in canonical form (block lists) with the cache marks on, the billing header left out.

Pure: the importers (and the proxy) write rows; the viewer, stats and export rebuild from them.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ctxview.store.requests import StoredRequests

BILLING_PREFIX = "x-anthropic-billing-header:"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()


def strip_cache(value: Any) -> Any:
    """`value` without any `cache_control` key, at any depth."""
    if isinstance(value, dict):
        return {k: strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache(v) for v in value]
    return value


def canonical(message: dict[str, Any]) -> dict[str, Any]:
    """The form a message is hashed (and stored) in: no cache marks, content as a block list."""
    m: dict[str, Any] = strip_cache(message)  # a dict stays a dict
    if isinstance(m.get("content"), str):
        m["content"] = [{"type": "text", "text": m["content"]}]
    return m


def message_hash(message: dict[str, Any]) -> str:
    return digest(canonical(message))


def wire(message: dict[str, Any]) -> dict[str, Any]:
    """A canonical message as Claude Code sends it (before cache marks)."""
    content = message.get("content")
    if (message.get("role") != "assistant" and isinstance(content, list) and len(content) == 1
            and isinstance(content[0], dict) and content[0].get("type") == "text"
            and set(content[0]) == {"type", "text"}):  # fmt: skip
        return {**message, "content": content[0]["text"]}
    return message


def mark(body: dict[str, Any], marks: list[dict[str, Any]]) -> list[str]:
    """Put each cache breakpoint of `cacheControl` on `body` in place; the paths it could not
    follow (a release that marks something else)."""
    missed: list[str] = []
    for m in marks or []:
        path = m.get("path") or []
        try:
            parent: Any = body
            for key in path[:-1]:
                parent = parent[key]
            last = path[-1]
            target = parent[last]
            if not isinstance(target, dict):
                raise TypeError(type(target).__name__)
            parent[last] = {**target, "cache_control": m.get("value")}
        except (KeyError, IndexError, TypeError):
            missed.append(json.dumps(path))
    return missed


def _content_string_to_block(body: dict[str, Any], marks: list[dict[str, Any]]) -> None:
    # A mark on messages[i].content[j] where content is a string: the string becomes a block list.
    for m in marks or []:
        path = m.get("path") or []
        if len(path) >= 3 and path[0] == "messages" and path[2] == "content":
            try:
                msg = body["messages"][path[1]]
            except (IndexError, TypeError):
                continue
            if isinstance(msg, dict) and isinstance(msg.get("content"), str):
                msg["content"] = [{"type": "text", "text": msg["content"]}]


def build(shape: dict[str, Any], messages: list[dict[str, Any]],
          marks: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:  # fmt: skip
    """`{system, tools, messages}` as sent (billing header aside), and the marks not placed."""
    body = {"system": copy.deepcopy(shape.get("system") or []),
            "tools": copy.deepcopy(shape.get("tools") or []),
            "messages": [wire(copy.deepcopy(m)) for m in messages]}  # fmt: skip
    _content_string_to_block(body, marks)
    missed = mark(body, marks)
    return body, missed


def request_digest(
    shape: dict[str, Any],
    messages: list[dict[str, Any]],
    marks: list[dict[str, Any]],
    params: dict[str, Any],
) -> str:
    """What Claude Code's `requestDigest` is computed over (messages canonical, marks on)."""
    body = {"system": copy.deepcopy(shape.get("system") or []),
            "tools": copy.deepcopy(shape.get("tools") or []),
            "messages": copy.deepcopy(messages)}  # fmt: skip
    mark(body, marks)
    return digest({**body, **(params or {})})


@dataclass
class RecordedRequest:
    """One API request as rebuilt from the store."""

    n: int
    id: str
    ts: float | None
    query_source: str
    params: dict[str, Any]
    body: dict[str, Any]  # system, tools, messages
    keep: int
    prev_len: int  # messages of the request before it
    marks: list[dict[str, Any]]
    usage: dict[str, Any] | None
    digest: str | None
    missing: list[str]  # tail hashes with no stored message
    missed_marks: list[str]
    computed_digest: str = ""

    @property
    def exact(self) -> bool:
        return not self.missing and not self.missed_marks

    @property
    def digest_ok(self) -> bool | None:
        if not self.digest or not self.exact:
            return None
        return self.computed_digest == self.digest

    @property
    def prefix_break(self) -> bool:
        """The request keeps less of the one before than that one sent: the cache prefix is
        broken here (a compaction, a resume, an edited history)."""
        return self.n > 0 and self.keep < self.prev_len

    def sizes(self) -> dict[str, int]:
        return {k: len(canonical_json(self.body[k])) for k in ("system", "tools", "messages")}


def rebuild(rows: list[dict[str, Any]], shapes: dict[str, dict[str, Any]],
            blobs: dict[str, dict[str, Any]]) -> list[RecordedRequest]:  # fmt: skip
    """Requests from their stored rows (in order), the shapes and blobs they name."""
    out: list[RecordedRequest] = []
    by_id: dict[str, list[dict[str, Any]]] = {}
    prev: list[dict[str, Any]] = []
    for n, row in enumerate(rows):
        base = by_id.get(row.get("base") or "", prev)
        keep = int(row.get("keep") or 0)
        tail = row.get("tail") or []
        missing = [h for h in tail if h not in blobs]
        messages = base[:keep] + [
            blobs.get(
                h,
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"[message {h[:12]} not in the transcript]"}
                    ],
                },
            )
            for h in tail
        ]
        shape = shapes.get(row.get("shape_hash") or "", {})
        marks = row.get("cache_control") or []
        body, missed = build(shape, messages, marks)
        if not shape:
            missed = [*missed, "shape"]
        out.append(
            RecordedRequest(
                n=n,
                id=str(row.get("id") or ""),
                ts=row.get("ts"),
                query_source=str(row.get("query_source") or ""),
                params=row.get("params") or {},
                body=body,
                keep=keep,
                prev_len=len(prev),
                marks=marks,
                usage=row.get("usage"),
                digest=row.get("digest"),
                missing=missing,
                missed_marks=missed,
                computed_digest=request_digest(shape, messages, marks, row.get("params") or {}),
            )
        )
        by_id[str(row.get("id") or "")] = messages
        prev = messages
    return out


def rebuild_stored(stored: StoredRequests) -> list[RecordedRequest]:
    """A session's recorded requests rebuilt from the store's rows, in order; [] when the
    transcript had none."""
    if not stored.rows:
        return []
    return rebuild(stored.rows, stored.shapes, stored.blobs)


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return str(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return (
            f"[tool_use {block.get('name')} {block.get('id')}] {canonical_json(block.get('input'))}"
        )
    if kind == "tool_result":
        c = block.get("content")
        inner = c if isinstance(c, str) else "\n".join(_block_text(b) for b in c or [])
        err = " error" if block.get("is_error") else ""
        return f"[tool_result {block.get('tool_use_id')}{err}]\n{inner}"
    if kind == "thinking":
        return f"[thinking]\n{block.get('thinking', '')}"
    return canonical_json(strip_cache(block))


def render_request(req: RecordedRequest) -> str:
    """One recorded request as text: params, system blocks, tools (name and size), then every
    message block verbatim; a cache breakpoint is marked where Claude Code put it."""
    cache = "  ⟪cache breakpoint⟫"
    p = req.params
    lines = [
        f"model {p.get('model')} · max_tokens {p.get('max_tokens')} · "
        f"thinking {canonical_json(p.get('thinking'))} · "
        f"keeps {req.keep} of {req.prev_len} messages before · source {req.query_source}"
    ]
    if p.get("betas"):
        lines.append("betas " + ", ".join(map(str, p["betas"])))
    lines.append("")
    for i, b in enumerate(req.body["system"]):
        lines.append(f"system[{i}]:" + (cache if "cache_control" in b else ""))
        lines.append(_block_text(b))
    tools = req.body["tools"]
    lines.append("")
    lines.append(f"tools ({len(tools)}): " + ", ".join(
        f"{t.get('name')} ({len(canonical_json(t)):,})" for t in tools))  # fmt: skip
    for i, m in enumerate(req.body["messages"]):
        lines.append("")
        content = m.get("content")
        if isinstance(content, str):
            lines.append(f"{m.get('role')} [{i}]:")
            lines.append(content)
            continue
        lines.append(f"{m.get('role')} [{i}]:")
        for b in content or []:
            lines.append(_block_text(b) + (cache if isinstance(b, dict)
                                           and "cache_control" in b else ""))  # fmt: skip
    return "\n".join(lines)


def _message_chars(m: dict[str, Any]) -> int:
    c = m.get("content")
    if isinstance(c, str):
        return len(c)
    return sum(len(_block_text(b)) for b in c or [])


def sent_figures(reqs: list[RecordedRequest]) -> dict[str, int]:
    """The recorded requests as one arm of `ctxview stats`: characters of message text sent,
    summed over requests; what each shares with the request before (its leading messages
    equal) counted as a cache read, the rest as a write; prefix breaks; the peak."""
    out = dict.fromkeys(("requests", "sent_chars", "cache_read_chars", "cache_write_chars",
                         "prefix_breaks", "peak_chars"), 0)  # fmt: skip
    prev: list[dict[str, Any]] = []
    for r in reqs:
        msgs = [strip_cache(m) for m in r.body["messages"]]
        sizes = [_message_chars(m) for m in msgs]
        shared = 0
        for a, b in zip(prev, msgs, strict=False):
            if a != b:
                break
            shared += 1
        total = sum(sizes)
        out["requests"] += 1
        out["sent_chars"] += total
        out["cache_read_chars"] += sum(sizes[:shared])
        out["cache_write_chars"] += total - sum(sizes[:shared])
        out["prefix_breaks"] += r.prefix_break
        out["peak_chars"] = max(out["peak_chars"], total)
        prev = msgs
    return out
