"""A store filled by the real proxy (`ctxview.proxy.server.Proxy`, real HTTP both sides) from
a scripted Messages API on loopback: one Claude Code-keyed session of five requests, whose
prompt cache is kept, broken by an edit inside the prefix, and broken by time (the proxy's
wall clock is the test's, so ten minutes pass without waiting them)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from ctxview.proxy.server import Proxy

STARTED = 1_764_000_000.0
SESSION = "cc-view-1"
SYSTEM = [{"type": "text", "text": "You are a careful helper.",
           "cache_control": {"type": "ephemeral"}}]  # fmt: skip
TOOLS = [{"name": "Bash", "description": "Run a command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]  # fmt: skip
# Each request's usage as the scripted API answers it (what the viewer must show, not a guess).
USAGE = [
    {"input_tokens": 12, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 0,
     "output_tokens": 30},
    {"input_tokens": 8, "cache_creation_input_tokens": 140, "cache_read_input_tokens": 900,
     "output_tokens": 25},
    {"input_tokens": 9, "cache_creation_input_tokens": 700, "cache_read_input_tokens": 410,
     "output_tokens": 22},
    {"input_tokens": 11, "cache_creation_input_tokens": 1290, "cache_read_input_tokens": 0,
     "output_tokens": 40},
    {"input_tokens": 7, "cache_creation_input_tokens": 60, "cache_read_input_tokens": 1290,
     "output_tokens": 18},
]  # fmt: skip
GAPS = [0.0, 20.0, 35.0, 600.0, 15.0]  # seconds before each request: the 4th is past 300 s


@dataclass
class ProxyFilled:
    store: Path
    session_id: str
    received: list[bytes] = field(default_factory=list)  # what the upstream got, byte for byte


def _bodies() -> list[dict[str, Any]]:
    user0 = {"role": "user", "content": "List the files, then read notes.txt."}
    a1 = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Listing them."},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
        ],
    }
    r1 = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "notes.txt\nsrc\nREADME.md",
            }
        ],
    }
    a2 = {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "Bash",
                "input": {"command": "cat notes.txt"},
            }
        ],
    }
    r2 = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "buy milk\ncall home"}
        ],
    }
    a3 = {"role": "assistant", "content": [{"type": "text", "text": "Two notes."}]}
    u3 = {"role": "user", "content": [{"type": "text", "text": "And the README?"}]}
    a4 = {"role": "assistant", "content": [{"type": "text", "text": "It is short."}]}
    u4 = {"role": "user", "content": "Thanks."}
    edited = copy.deepcopy(r1)  # the client rewrites a result inside the prefix
    edited["content"][0]["content"] = "notes.txt\nsrc"
    convs = [
        [user0],
        [user0, a1, r1],
        [user0, a1, edited, a2, r2],
        [user0, a1, edited, a2, r2, a3, u3],
        [user0, a1, edited, a2, r2, a3, u3, a4, u4],
    ]
    meta = {"user_id": json.dumps({"session_id": SESSION.removeprefix("cc-")})}
    return [
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1000,
            "temperature": 0.2,
            "metadata": meta,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": c,
        }
        for c in convs
    ]


async def proxy_fill(tmp: Path) -> ProxyFilled:
    """The five requests sent through a real proxy; returns when all are recorded."""
    filled = ProxyFilled(tmp / "store.db", SESSION)
    answers = iter(USAGE)

    async def handle(request: web.Request) -> web.Response:
        filled.received.append(await request.read())
        return web.json_response({"id": f"msg_{len(filled.received)}", "type": "message",
                                  "role": "assistant", "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": "ok"}],
                                  "stop_reason": "end_turn", "usage": next(answers)})  # fmt: skip

    app = web.Application()
    app.router.add_post("/v1/messages", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    now = [STARTED]
    proxy = Proxy(filled.store, upstream=f"http://127.0.0.1:{port}", clock=lambda: now[0])
    await proxy.start()
    try:
        async with aiohttp.ClientSession() as s:
            for gap, body in zip(GAPS, _bodies(), strict=True):
                now[0] += gap
                async with s.post(f"http://127.0.0.1:{proxy.port}/{proxy.secret}/v1/messages",
                                  data=json.dumps(body).encode(),
                                  headers={"content-type": "application/json",
                                           "x-api-key": "sk-test"}) as resp:  # fmt: skip
                    assert resp.status == 200, await resp.text()
                    await resp.read()
        await proxy.recorder.drain()
    finally:
        await proxy.stop()
        await runner.cleanup()
    return filled
