"""A scripted Gemini API (generateContent / streamGenerateContent) on loopback, for driving the
real Gemini CLI in tests (`GOOGLE_GEMINI_BASE_URL` points the CLI here, any `GEMINI_API_KEY`).

Every POST is recorded (its path and JSON body, when it came and when its answer was out). A
request that offers tools (the agent's turn)
is answered with the script's next step: a function call the model "makes", or a final text; a
request past the script's end gets "done.", so the CLI always finishes. A request without tools
(the CLI's own side calls: history compression, a classifier, a next-speaker check) gets a short
text, a compression summary when it asks for one. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

if __package__:  # imported as tests.agents.fake_gemini (the project's root on sys.path)
    from .scripted_server import Quiet, ScriptedServer
else:  # as fake_gemini (tests/agents on sys.path: pytest's own import)
    from scripted_server import Quiet, ScriptedServer

Request = dict[str, Any]
SUMMARY = "<state_snapshot><overall_goal>the scripted task</overall_goal></state_snapshot>"


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    prompt_tokens: int = 100  # the usage reported with it (Gemini compresses on the last one)
    id: str | None = None  # the call's id, as a model may give one (else Gemini makes its own)

    def part(self) -> dict[str, Any]:
        call = {"name": self.name, "args": self.args, **({"id": self.id} if self.id else {})}
        return {"functionCall": call}


@dataclass
class Say:
    text: str
    prompt_tokens: int = 100
    more: bool = False  # the next-speaker check after it says "model": Gemini goes on itself


@dataclass
class Calls:
    """Function calls the model makes at once, in one answer (Gemini runs them together)."""

    calls: list[Call]
    prompt_tokens: int = 100


@dataclass
class Scripted(ScriptedServer[Call | Calls | Say]):
    # `requests`: every request as {"path", "body", "at", "done"} (perf_counter seconds)
    _more: bool = False
    # Sub-agents running at once, each its own script: a turn that offers `complete_task` (a
    # sub-agent's) and holds the key (a text of its prompt) takes that script's next step.
    agents: dict[str, list[Call | Say]] = field(default_factory=dict)
    # Called with each request's body before it is answered (the agent waits meanwhile): a test
    # starts something at a chosen point of the run.
    hold: Callable[[Request], None] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def turns(self) -> list[Request]:
        """The bodies of the agent's turns (the requests that offered tools)."""
        return [r["body"] for r in self.requests if r["body"].get("tools")]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        scripted = self

        class Handler(Quiet):
            def do_GET(self) -> None:
                self.send_json({"models": []})

            def do_POST(self) -> None:
                body = json.loads(self.raw_body() or b"{}")
                if scripted.hold is not None:
                    scripted.hold(body)
                record = {"path": self.path, "body": body, "at": time.perf_counter()}
                with scripted._lock:
                    scripted.requests.append(record)
                    reply = scripted._reply(self.path, body)
                if ":countTokens" in self.path:
                    self.send_json({"totalTokens": len(json.dumps(body)) // 4})
                elif ":streamGenerateContent" in self.path:
                    self.start_stream()
                    self.wfile.write(f"data: {json.dumps(reply)}\r\n\r\n".encode())
                    self.wfile.flush()
                else:
                    self.send_json(reply)
                record["done"] = time.perf_counter()

        return Handler

    def _reply(self, path: str, body: Request) -> dict[str, Any]:
        if not body.get("tools"):
            # JSON first: a check after a compression has the summary in its history.
            if body.get("generationConfig", {}).get("responseMimeType") == "application/json":
                speaker, self._more = ("model" if self._more else "user"), False
                return _answer([{"text": '{"reasoning": "scripted", "model_choice": "flash", '
                                         f'"next_speaker": "{speaker}"}}'}])  # fmt: skip
            if "state_snapshot" in json.dumps(body):
                return _answer([{"text": SUMMARY}])
            return _answer([{"text": "ok"}])
        step = self._agent_step(body) or self.take(Say("done."))
        if isinstance(step, Call):
            return _answer([step.part()], step.prompt_tokens)
        if isinstance(step, Calls):
            return _answer([c.part() for c in step.calls], step.prompt_tokens)
        self._more = step.more
        return _answer([{"text": step.text}], step.prompt_tokens)

    def _agent_step(self, body: Request) -> Call | Say | None:
        names = {d.get("name") for t in body.get("tools", []) for d in
                 t.get("functionDeclarations", [])}  # fmt: skip
        if not self.agents or "complete_task" not in names:
            return None
        text = json.dumps(body)
        for key, script in self.agents.items():
            if key in text:
                return script.pop(0) if script else Say("done.")
        return None


def _answer(parts: list[dict[str, Any]], prompt_tokens: int = 100) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                        "index": 0}],
        "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": 10,
                          "totalTokenCount": prompt_tokens + 10},
        "modelVersion": "gemini-2.5-flash",
    }  # fmt: skip


def function_responses(body: Request) -> list[dict[str, Any]]:
    """Every functionResponse part the request's contents hold, in order."""
    return [part["functionResponse"] for content in body.get("contents", [])
            for part in content.get("parts", []) if "functionResponse" in part]  # fmt: skip


def response_text(fr: dict[str, Any]) -> str:
    """What a functionResponse told the model: its output (or error) text."""
    resp = fr.get("response", {})
    for key in ("output", "error"):
        if isinstance(resp.get(key), str):
            return str(resp[key])
    return json.dumps(resp)
