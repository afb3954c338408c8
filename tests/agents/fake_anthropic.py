"""A scripted Messages API on loopback, for driving the real Claude Code in tests.

Claude Code POSTs `/v1/messages?beta=true` with `stream: true`; each answer is SSE
(message_start, content blocks, message_delta, message_stop). The script is a list of steps, one
per main request (a request that offers tools): a step is a tool call `{"tool": name, "input":
{...}}` or a final `{"text": ...}`, or a function of the request's body that returns one. Side requests (titles, no tools) get a short text, and a
compaction's summary request gets an `<analysis>`/`<summary>` answer. Every request body is kept
in `requests`, so a test reads exactly what the model was sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

if __package__:  # imported as tests.agents.fake_anthropic (the project's root on sys.path)
    from .scripted_server import Quiet, Served
else:  # as fake_anthropic (tests/agents on sys.path: pytest's own import, the benches)
    from scripted_server import Quiet, Served

# A step of a script: a tool call or a final text, or a function of the request giving one.
Step = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]

SUMMARY = "The user asked for a scripted session; files were read, edited and searched."


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def last_user_text(body: dict[str, Any]) -> str:
    msgs = body.get("messages") or []
    if not msgs:
        return ""
    content = msgs[-1].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


def _first_user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            return json.dumps(m.get("content"))
    return ""


def is_summary_request(body: dict[str, Any]) -> bool:
    """Claude Code's compaction asks for "an <analysis> block followed by a <summary> block",
    in the last message (after a tool result, in a block of its own or a system message)."""
    tail = json.dumps(body.get("messages", [])[-2:])
    return "<summary>" in tail and "<analysis>" in tail


class FakeAnthropic(Served):
    """`with FakeAnthropic(steps) as api:` ... `api.url`, `api.requests`, `api.main_requests`."""

    def __init__(self, steps: list[Step] | None = None,
                 gate: threading.Semaphore | None = None,
                 threads: dict[str, list[Step]] | None = None,
                 prefix: str = "",
                 count_tokens: Callable[[dict[str, Any]], int] | None = None) -> None:  # fmt: skip
        """`gate`: each main request waits for a release first (a test paces the session).
        `threads`: scripts of their own for conversations whose first user message holds the
        key (a sub-agent's prompt: Claude Code runs it beside the main conversation).
        `prefix`: in every message and tool-use id (a resumed session's second server must not
        give the ids of the first).
        `count_tokens`: the answer to `/v1/messages/count_tokens` from its body (Claude Code
        counts a large file's tokens before a Read sends it); 10 without it."""
        self.prefix = prefix
        self.count_tokens = count_tokens or (lambda body: 10)
        self.steps = list(steps or [])
        self.gate = gate
        self.threads = {k: list(v) for k, v in (threads or {}).items()}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._n = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def main_requests(self) -> list[dict[str, Any]]:
        """Requests that offered tools and were not a compaction's summary request."""
        return [r for r in self.requests if r.get("tools") and not is_summary_request(r)]

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks to answer `body` with."""
        if self.gate is not None and body.get("tools") and not is_summary_request(body):
            self.gate.acquire(timeout=60)
        with self.lock:
            self.requests.append(body)
            if is_summary_request(body):
                return [
                    {
                        "type": "text",
                        "text": f"<analysis>done</analysis>\n<summary>{SUMMARY}</summary>",
                    }
                ]
            if not body.get("tools"):
                return [{"type": "text", "text": "Scripted session"}]
            script = self.steps
            first = _first_user_text(body)
            for key, steps in self.threads.items():
                if key in first:
                    script = steps
            step = script.pop(0) if script else {"text": "Done."}
        if callable(step):  # a step decided by what the model was sent (an id it was given)
            step = step(body)
        if "tool" in step:
            self._n += 1
            return [
                {
                    "type": "tool_use",
                    "id": f"toolu_{self.prefix}{self._n:04d}_{step['tool']}",
                    "name": step["tool"],
                    "input": step["input"],
                    **({"input_tokens": step["input_tokens"]} if "input_tokens" in step else {}),
                }
            ]
        return [{"type": "text", "text": step["text"]}]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(Quiet):
            def do_POST(self) -> None:
                try:
                    body = json.loads(self.raw_body() or b"{}")
                except ValueError:
                    body = {}
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self.send_json({"input_tokens": api.count_tokens(body)})
                    return
                blocks = api.answer(body)
                if not body.get("stream"):
                    self.send_json(
                        {
                            "id": "msg_x",
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model", "m"),
                            "content": blocks,
                            "stop_reason": "end_turn",
                            "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 5},
                        }
                    )
                    return
                self._stream(body, blocks)

            def _stream(self, body: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
                self.start_stream()
                out = [_sse("message_start", {"type": "message_start", "message": {
                    "id": f"msg_{api.prefix}{len(api.requests):04d}", "type": "message",
                    "role": "assistant", "model": body.get("model", "m"), "content": [],
                    "stop_reason": None, "stop_sequence": None,
                    # A step's `input_tokens` reports a fuller context (a host's compaction).
                    "usage": {"input_tokens": next((b.pop("input_tokens") for b in blocks
                                                    if "input_tokens" in b), 100),
                              "output_tokens": 1,
                              "cache_read_input_tokens": 0,
                              "cache_creation_input_tokens": 0}}})]  # fmt: skip
                stop = "end_turn"
                for i, block in enumerate(blocks):
                    if block["type"] == "tool_use":
                        stop = "tool_use"
                        start = {**block, "input": {}}
                        delta = {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        }
                    else:
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    out.append(
                        _sse(
                            "content_block_start",
                            {"type": "content_block_start", "index": i, "content_block": start},
                        )
                    )
                    out.append(
                        _sse(
                            "content_block_delta",
                            {"type": "content_block_delta", "index": i, "delta": delta},
                        )
                    )
                    out.append(
                        _sse("content_block_stop", {"type": "content_block_stop", "index": i})
                    )
                out.append(
                    _sse(
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 20},
                        },
                    )
                )
                out.append(_sse("message_stop", {"type": "message_stop"}))
                self.wfile.write(b"".join(out))
                self.wfile.flush()

        return Handler
