"""A scripted OpenAI API on loopback, for driving real agents in tests: the Responses API (Codex)
and Chat Completions (aider through litellm, Copilot CLI's BYOK provider).

Each POST to `/v1/responses` or `/v1/chat/completions` is recorded (its JSON body) and answered
with the script's next step: a function call the model "makes", or a final assistant message
(SSE for Responses and for a streamed completion, one JSON object otherwise). A request that
arrives after the script is spent gets a plain "done." message, so the agent always finishes.
A step's `tokens` is the usage its answer reports (a full context makes Codex compact), and
Codex's compaction request is answered with a `compaction` item without taking a step. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

if __package__:  # imported as tests.agents.fake_openai (the project's root on sys.path)
    from .scripted_server import Quiet, ScriptedServer
else:  # as fake_openai (tests/agents on sys.path: pytest's own import, the benches)
    from scripted_server import Quiet, ScriptedServer

Request = dict[str, Any]


@dataclass
class Call:
    """The model calls a tool. With `server`, an MCP server's tool: Codex 0.169 offers those in
    a `namespace` tool named `mcp__<server>` and expects the call to name its namespace (older
    versions flatten them to `mcp__<server>__<tool>`); which form is read from the request."""

    name: str
    args: dict[str, Any]
    server: str | None = None
    tokens: int | None = None  # the usage's input tokens its answer reports (100 without)

    def item(self, request: Request) -> dict[str, Any]:
        if self.server is None:
            return {"name": self.name}
        space = f"mcp__{self.server}"
        for tool in request.get("tools", []):
            if (tool.get("type"), tool.get("name")) == ("namespace", space) and any(
                t.get("name") == self.name for t in tool.get("tools", [])
            ):
                return {"namespace": space, "name": self.name}
        return {"name": f"{space}__{self.name}"}


@dataclass
class Say:
    text: str
    tokens: int | None = None


@dataclass
class Scripted(ScriptedServer[Call | Say]):
    call_ids: str = "call_"  # a completion's tool call ids: `<call_ids><n>` (another per run)
    # Answers a request of its own without taking a step (an agent's background summary request,
    # whose time among the others is the agent's), or None: the script's next step.
    aside: Callable[[Request], Say | None] | None = None
    compactions: int = 0  # compaction requests answered
    # Responses the API keeps (`store`): id -> the whole context a continuation carries on;
    # and each request's whole input, what it continued put before what it sent.
    contexts: dict[str, list[Any]] = field(default_factory=dict)
    full_inputs: list[list[Any]] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        scripted = self

        class Handler(Quiet):
            def do_GET(self) -> None:  # /v1/models and the like: nothing to offer
                self.send_json({"object": "list", "data": []})

            def do_POST(self) -> None:
                raw = self.raw_body()
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/chat/completions"):
                    self._chat(scripted._chat_answer(body), bool(body.get("stream")))
                    return
                if not path.endswith("/responses"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                prev = body.get("previous_response_id")
                if prev is not None and prev not in scripted.contexts:
                    # As the API answers a chain it cannot follow.
                    self.send_json({"error": {"message": f"Previous response with id '{prev}' "
                                               "not found.", "type": "invalid_request_error",
                                               "param": "previous_response_id"}}, 400)  # fmt: skip
                    return
                events = scripted._answer(body)
                if body.get("stream") is not True:
                    self.send_json(events[-1]["response"])
                    return
                self.start_stream()
                for ev in events:
                    chunk = f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n"
                    self.wfile.write(chunk.encode())
                self.wfile.flush()
                self.close_connection = True

            def _chat(self, completion: dict[str, Any], stream: bool) -> None:
                if not stream:
                    self.send_json(completion)
                    return
                self.start_stream()
                for chunk in _chunks(completion):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler

    def _next(self, body: Request) -> tuple[int, Call | Say]:
        own = self.aside(body) if self.aside is not None else None
        with self._lock:
            self.requests.append(body)
            return len(self.requests), own if own is not None else self.take(Say("done."))

    def _chat_answer(self, body: Request) -> dict[str, Any]:
        """The next step as one Chat Completions answer (`chat.completion`)."""
        n, step = self._next(body)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(step, Call):
            message["tool_calls"] = [{"id": f"{self.call_ids}{n}", "type": "function", "function": {
                "name": step.name, "arguments": json.dumps(step.args)}}]  # fmt: skip
        else:
            message["content"] = step.text
        return {
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if isinstance(step, Call) else "stop"}],
            # distinct per request, a cached part inside the prompt's count (OpenAI's way)
            "usage": {"prompt_tokens": 1000 + 10 * n, "completion_tokens": 5 + n,
                      "total_tokens": 1005 + 11 * n, "prompt_tokens_details": {"cached_tokens": 400}},
        }  # fmt: skip

    def _answer(self, body: Request) -> list[dict[str, Any]]:
        items = body.get("input")
        if isinstance(items, list) and items and items[-1].get("type") == "compaction_trigger":
            return self._compaction(body)
        n, step = self._next(body)
        rid = f"resp_{n}"
        if isinstance(step, Call):
            item: dict[str, Any] = {
                "type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                **step.item(body), "arguments": json.dumps(step.args),
            }  # fmt: skip
        else:
            item = {
                "type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }  # fmt: skip
        events = _events(rid, item, 100 if step.tokens is None else step.tokens)
        self._keep(body, rid, item)
        return events

    def _keep(self, body: Request, rid: str, item: dict[str, Any]) -> None:
        """The API's own state (`store`, its default): a response's whole context, its input
        after the one it continues (`previous_response_id`) and its output, for a later
        request to continue."""
        items = body.get("input")
        mine = [{"role": "user", "content": items}] if isinstance(
            items, str) else list(items or [])  # fmt: skip
        full = [*self.contexts.get(body.get("previous_response_id") or "", []), *mine]
        with self._lock:
            self.full_inputs.append(full)
            if body.get("store") is not False:
                self.contexts[rid] = [*full, item]

    def _compaction(self, body: Request) -> list[dict[str, Any]]:
        """Codex 0.169's remote compaction (v2): a Responses request whose input ends with a
        `compaction_trigger` item, answered with the one `compaction` item Codex then sends in
        place of the history (its content opaque, as the API's is). No step is taken."""
        with self._lock:
            self.requests.append(body)
            n = len(self.requests)
            self.compactions += 1
        item = {"type": "compaction", "id": f"cmp_{n}",
                "encrypted_content": f"compacted-history-{self.compactions}"}  # fmt: skip
        return _events(f"resp_{n}", item, 100)


def _events(rid: str, item: dict[str, Any], tokens: int) -> list[dict[str, Any]]:
    """One answer's SSE events; `tokens` the input tokens its usage reports."""
    usage = {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": tokens + 10}  # fmt: skip
    return [
        {"type": "response.created", "response": {"id": rid}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {
            "id": rid, "object": "response", "status": "completed", "output": [item],
            "usage": usage}},
    ]  # fmt: skip


def _chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """A completion as the `chat.completion.chunk`s a streamed answer sends: the role, the text or
    the tool calls, then the finish reason with the usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    else:
        delta["content"] = message["content"]
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
         "usage": completion["usage"]},
    ]  # fmt: skip


def chat_tool_outputs(request: Request) -> dict[str, str]:
    """tool_call_id -> the text the model was given for that call, from a Chat Completions
    request's `messages`."""
    return {m.get("tool_call_id", ""): _text(m.get("content"))
            for m in request.get("messages", []) if m.get("role") == "tool"}  # fmt: skip


def tool_outputs(request: Request) -> dict[str, str]:
    """call_id -> the text the model was given for that call, from a request's `input`."""
    out: dict[str, str] = {}
    for item in request.get("input", []):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            out[item.get("call_id", "")] = _text(item.get("output"))
    return out


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):  # content items
        return "\n".join(_text(part) for part in output)
    if isinstance(output, dict):
        if "text" in output:
            return str(output["text"])
        if "content" in output:
            return _text(output["content"])
    return json.dumps(output)
