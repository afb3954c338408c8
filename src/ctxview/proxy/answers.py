"""Each protocol's answer reassembled from the bytes streamed back: the Messages API's SSE into
its message (blocks, stop reason, usage with cache reads and writes), the Responses API's into
its response, Chat Completions' chunks into the completion; a plain JSON answer as it is.

`Assembler.feed` takes the bytes as they come (already decompressed) and never raises: an
event it cannot read is counted, and the answer is then marked `partial`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ctxview.proxy import protocols
from ctxview.proxy.sse import Event, SseParser

MAX_JSON_BYTES = 64 << 20  # a non-streamed answer kept for parsing up to this size


@dataclass
class Answer:
    """What the upstream answered, reassembled."""

    body: Any = None  # the message / response / completion as JSON, None when unreadable
    streamed: bool = False
    complete: bool = False  # the stream's own end was seen (message_stop, [DONE], completed)
    bad_events: int = 0
    error: Any = None  # an error event's payload
    raw: bytes | None = None  # an answer that is not JSON (kept only when small)

    def usage(self) -> dict[str, Any] | None:
        if isinstance(self.body, dict):
            u = self.body.get("usage")
            if isinstance(u, dict):
                return u
            resp = self.body.get("response")
            inner = resp.get("usage") if isinstance(resp, dict) else None
            if isinstance(inner, dict):
                return inner
        return None


def usage_figures(usage: dict[str, Any] | None) -> dict[str, int]:
    """Input, output, cache read and cache write tokens of any protocol's usage (0 when absent)."""
    u = usage or {}

    def num(*keys: str) -> int:
        for k in keys:
            v: Any = u
            for part in k.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if isinstance(v, int | float) and not isinstance(v, bool):
                return int(v)
        return 0

    return {
        "input": num("input_tokens", "prompt_tokens"),
        "output": num("output_tokens", "completion_tokens"),
        "cache_read": num(
            "cache_read_input_tokens",
            "input_tokens_details.cached_tokens",
            "prompt_tokens_details.cached_tokens",
        ),
        "cache_write": num("cache_creation_input_tokens"),
    }


class Assembler:
    """Feeds on one answer's bytes; `finish()` gives the `Answer`."""

    def __init__(self, protocol: str, content_type: str) -> None:
        self.protocol = protocol
        self.sse = "text/event-stream" in content_type.lower()
        self.answer = Answer(streamed=self.sse)
        self._parser = SseParser()
        self._buf = bytearray()
        self._over = False
        self._state: Any = _STATES.get(protocol, _Opaque)()

    def feed(self, chunk: bytes) -> None:
        if self.sse:
            for ev in self._parser.feed(chunk):
                self._event(ev)
        elif not self._over:
            if len(self._buf) + len(chunk) > MAX_JSON_BYTES:
                self._over, self._buf = True, bytearray()
            else:
                self._buf += chunk

    def _event(self, ev: Event) -> None:
        if ev.data == "[DONE]":
            self.answer.complete = True
            return
        try:
            data = json.loads(ev.data)
        except ValueError:
            self.answer.bad_events += 1
            return
        try:
            self._state.feed(ev.event, data, self.answer)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            self.answer.bad_events += 1

    def finish(self) -> Answer:
        a = self.answer
        if self.sse:
            for ev in self._parser.close():
                self._event(ev)
            a.body = self._state.result()
            return a
        if self._over:
            return a
        raw = bytes(self._buf)
        self._buf = bytearray()
        try:
            a.body = json.loads(raw) if raw else None
            a.complete = True
        except ValueError:
            a.raw = raw[: 1 << 20]
        return a


class _Opaque:
    """An SSE stream of a protocol ctxview does not reassemble: its events as a list."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def feed(self, name: str, data: Any, answer: Answer) -> None:
        self.events.append({"event": name, "data": data})

    def result(self) -> Any:
        return {"events": self.events}


class _Messages:
    """Anthropic Messages SSE: message_start, content_block_start/delta/stop, message_delta,
    message_stop, ping, error."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}

    def feed(self, name: str, data: Any, answer: Answer) -> None:
        kind = data.get("type", name)
        if kind == "message_start":
            self.message = dict(data["message"])
        elif kind == "content_block_start":
            i = int(data["index"])
            self.blocks[i] = dict(data["content_block"])
            if self.blocks[i].get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                self.json_parts[i] = []
        elif kind == "content_block_delta":
            self._delta(int(data["index"]), data["delta"])
        elif kind == "content_block_stop":
            i = int(data["index"])
            parts = self.json_parts.pop(i, None)
            if parts is not None and i in self.blocks:
                text = "".join(parts)
                self.blocks[i]["input"] = json.loads(text) if text else {}
        elif kind == "message_delta":
            msg = self.message if self.message is not None else {}
            self.message = msg
            msg.update(data.get("delta") or {})
            if isinstance(data.get("usage"), dict):
                msg["usage"] = {**(msg.get("usage") or {}), **data["usage"]}
        elif kind == "message_stop":
            answer.complete = True
        elif kind == "error":
            answer.error = data.get("error", data)

    def _delta(self, i: int, delta: dict[str, Any]) -> None:
        block = self.blocks.setdefault(i, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
        elif kind == "input_json_delta":
            self.json_parts.setdefault(i, []).append(delta["partial_json"])
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta["signature"]
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta["citation"])
        else:
            raise ValueError(kind)

    def result(self) -> Any:
        if self.message is None and not self.blocks:
            return None
        msg = dict(self.message or {})
        for i, parts in self.json_parts.items():  # a stream cut inside a tool call's input
            if i in self.blocks:
                self.blocks[i]["partial_json"] = "".join(parts)
        msg["content"] = [self.blocks[i] for i in sorted(self.blocks)]
        return msg


class _Responses:
    """OpenAI Responses SSE: response.created, response.output_item.added/done, text deltas,
    response.completed / failed / incomplete, error."""

    def __init__(self) -> None:
        self.response: dict[str, Any] | None = None
        self.items: dict[int, Any] = {}

    def feed(self, name: str, data: Any, answer: Answer) -> None:
        kind = data.get("type", name)
        if kind in ("response.created", "response.in_progress"):
            self.response = dict(data["response"])
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self.items[int(data.get("output_index", len(self.items)))] = data["item"]
        elif kind == "response.output_text.delta":
            item = self.items.get(int(data.get("output_index", 0)))
            if isinstance(item, dict) and item.get("status") != "completed":
                content = item.setdefault("content", [])
                j = int(data.get("content_index", 0))
                while len(content) <= j:
                    content.append({"type": "output_text", "text": ""})
                content[j]["text"] = content[j].get("text", "") + data["delta"]
        elif kind in ("response.completed", "response.failed", "response.incomplete"):
            self.response = {**(self.response or {}), **data["response"]}
            answer.complete = True
        elif kind == "error":
            answer.error = data

    def result(self) -> Any:
        if self.response is None and not self.items:
            return None
        resp = dict(self.response or {})
        if not resp.get("output") and self.items:
            resp["output"] = [self.items[i] for i in sorted(self.items)]
        return resp


class _Chat:
    """Chat Completions chunks (`data: {...}` then `data: [DONE]`) into one completion."""

    def __init__(self) -> None:
        self.head: dict[str, Any] | None = None
        self.choices: dict[int, dict[str, Any]] = {}
        self.usage: Any = None

    def feed(self, name: str, data: Any, answer: Answer) -> None:
        if "error" in data and "choices" not in data:
            answer.error = data["error"]
            return
        if self.head is None:
            self.head = {k: v for k, v in data.items() if k not in ("choices", "usage")}
            self.head["object"] = "chat.completion"
        if data.get("usage") is not None:
            self.usage = data["usage"]
        for ch in data.get("choices") or []:
            i = int(ch.get("index", 0))
            out = self.choices.setdefault(i, {"index": i, "message": {"role": "assistant"},
                                              "finish_reason": None})  # fmt: skip
            msg = out["message"]
            delta = ch.get("delta") or {}
            if delta.get("role"):
                msg["role"] = delta["role"]
            for key in ("content", "refusal", "reasoning_content"):
                if delta.get(key) is not None:
                    msg[key] = (msg.get(key) or "") + delta[key]
            for tc in delta.get("tool_calls") or []:
                calls = msg.setdefault("tool_calls", [])
                j = int(tc.get("index", len(calls)))
                while len(calls) <= j:
                    calls.append({"id": None, "type": "function",
                                  "function": {"name": "", "arguments": ""}})  # fmt: skip
                call = calls[j]
                if tc.get("id"):
                    call["id"] = tc["id"]
                if tc.get("type"):
                    call["type"] = tc["type"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    call["function"]["name"] += fn["name"]
                if fn.get("arguments"):
                    call["function"]["arguments"] += fn["arguments"]
            if ch.get("finish_reason") is not None:
                out["finish_reason"] = ch["finish_reason"]

    def result(self) -> Any:
        if self.head is None:
            return None
        out = {**self.head, "choices": [self.choices[i] for i in sorted(self.choices)]}
        if self.usage is not None:
            out["usage"] = self.usage
        return out


_STATES: dict[str, type[Any]] = {
    protocols.ANTHROPIC: _Messages,
    protocols.RESPONSES: _Responses,
    protocols.CHAT: _Chat,
}
