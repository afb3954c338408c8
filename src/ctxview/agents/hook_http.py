"""The resident engine's HTTP face: Claude Code's `"type": "http"` hooks POST the hook input to
`http://127.0.0.1:PORT/hook/EVENT` and read the hook's JSON output from the answer, so a tool
call costs no process start (the command hook's Python start was most of its time).

HTTP/1.1 over asyncio streams, as little of it as Claude Code's client needs: a request line,
headers, a `Content-Length` body; keep-alive; each answer written in one piece with Nagle off
(headers and body as two writes meet the client's delayed ACK: 40 ms a call). Every request
must carry the store's secret (`endpoint.HEADER`) and no `Origin` (a browser's), else 403.
`GET /health` (with the secret) answers the engine's pid, for `ctxview doctor`.

Never breaks the agent: a failure inside the engine answers `{}` (Claude Code keeps its own
output) and is recorded for `ctxview doctor`. When the engine is not running at all, Claude Code
meets a refused connection: it keeps its own output at once, and writes a
`hook_non_blocking_error` record into the transcript, which the engine records when it imports
that transcript again (`claude_code.transcript_import`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ctxview.agents import failures
from ctxview.agents.claude_code.hooks import hook_input
from ctxview.agents.endpoint import FAIL_HEADER, HEADER, LOOPBACK, Endpoint
from ctxview.agents.hook_trace import Trace
from ctxview.agents.hosts import host_of

MAX_HEAD = 64 << 10
MAX_BODY = 1 << 30  # a hook input holds a tool's whole output
_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
            411: "Length Required", 413: "Payload Too Large"}  # fmt: skip
_REFUSED_EVERY = 60.0  # seconds between two records of refused requests

Respond = Callable[[str, dict[str, Any], Trace], Awaitable[dict[str, Any] | None]]


class HookServer:
    """Serves one store's hooks on 127.0.0.1:`endpoint.port`."""

    def __init__(self, store: str, endpoint: Endpoint, respond: Respond, budget: float,
                 on_request: Callable[[], None]) -> None:  # fmt: skip
        self.store = store
        self.endpoint = endpoint
        self.respond = respond
        self.budget = budget
        self.on_request = on_request  # the engine's idle clock
        self.server: asyncio.Server | None = None
        self._secret = endpoint.secret.encode()
        self._refused_at = 0.0

    async def start(self) -> None:
        # Only ever loopback: the address is not configurable. The backlog is the system's
        # most: while the engine is held up (a slow step, a checkpoint), every hook process of
        # every session queues its connect here; asyncio's default of 100 made the rest of them
        # wait out the kernel's SYN retries (1 s, 3 s) instead of their turn.
        self.server = await asyncio.start_server(self._connection, host=LOOPBACK,
                                                 port=self.endpoint.port, reuse_address=True,
                                                 backlog=socket.SOMAXCONN)  # fmt: skip

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:  # fmt: skip
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while await self._request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                       ) -> bool:  # fmt: skip
        """Serve one request; False when the connection is to be closed."""
        head = await reader.readuntil(b"\r\n\r\n")
        trace = Trace(transport="http")
        self.on_request()
        if len(head) > MAX_HEAD:
            return await self._send(writer, 413, b"", close=True)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return await self._send(writer, 400, b"", close=True)
        method, target, _ = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        close = headers.get("connection", "").lower() == "close"
        if "transfer-encoding" in headers:
            return await self._send(writer, 411, b"", close=True)
        try:
            size = int(headers.get("content-length") or 0)
        except ValueError:
            return await self._send(writer, 400, b"", close=True)
        if size > MAX_BODY:
            return await self._send(writer, 413, b"", close=True)
        body = await reader.readexactly(size) if size else b""
        trace.lap("read")
        if not self._allowed(headers):
            self._refused(target)
            return await self._send(writer, 403, b"", close=True)
        if method == "GET" and target == "/health":
            answer = json.dumps({"engine": os.getpid(), "store": self.store}).encode()
            return await self._send(writer, 200, answer, close=close)
        if method != "POST" or not target.startswith("/hook/"):
            return await self._send(writer, 404, b"", close=close)
        answer = await self._hook(target.removeprefix("/hook/"), body, headers, trace)
        sending = time.perf_counter()
        keep = await self._send(writer, 200, answer, close=close)
        trace.add("answer", (time.perf_counter() - sending) * 1000)
        trace.sent()
        return keep

    def _allowed(self, headers: dict[str, str]) -> bool:
        if "origin" in headers:  # a browser's request: never a hook's
            return False
        given = headers.get(HEADER.lower(), "").encode()
        return hmac.compare_digest(given, self._secret)

    def _refused(self, target: str) -> None:
        now = time.monotonic()
        if now - self._refused_at >= _REFUSED_EVERY:
            self._refused_at = now
            failures.record(self.store, "http", f"a request to {target[:80]} without ctxview's "
                            "hook secret was refused (another program, or hooks installed for "
                            "another store: run `ctxview install claude-code` again)")  # fmt: skip

    async def _hook(self, event: str, body: bytes, headers: dict[str, str], trace: Trace
                    ) -> bytes:  # fmt: skip
        """The hook's JSON output, `{}` for none; a failure is recorded and answers `{}`."""
        raw = body
        try:
            payload = hook_input(body)
            if host_of(event) is None:  # Claude Code's: its own name for the event
                event = str(payload.get("hook_event_name") or event)
            trace.event, trace.tool = event, str(payload.get("tool_name") or "")
            if headers.get(FAIL_HEADER.lower()):
                raise RuntimeError("failure forced by CTXVIEW_HOOK_FAIL")
            trace.lap("parse")
            output = await asyncio.wait_for(self.respond(event, payload, trace), self.budget)
        except Exception as exc:  # recorded; Claude Code keeps its own output
            what = failures.describe(exc, self.budget)
            trace.error = what
            name, detail = failures.about(raw, event)
            failures.record(self.store, name, what, detail)
            return b"{}"
        return b"{}" if output is None else json.dumps(output, ensure_ascii=False).encode()

    async def _send(self, writer: asyncio.StreamWriter, status: int, body: bytes, *,
                    close: bool) -> bool:  # fmt: skip
        head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"{'Connection: close' if close else 'Connection: keep-alive'}\r\n\r\n")  # fmt: skip
        writer.write(head.encode("latin-1") + body)  # one write: see the module's note
        await writer.drain()
        return not close
