"""What the scripted model servers (fake_anthropic.py, fake_openai.py, fake_gemini.py) share: an
HTTP server on a free port of 127.0.0.1 served from a thread of its own, a quiet request handler
that reads and writes JSON and starts an SSE stream, and a script of steps taken one per request
with every request recorded. Each fake adds only its API's requests and answers."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

S = TypeVar("S")


class Quiet(BaseHTTPRequestHandler):
    """A handler that logs nothing (pytest shows stderr on failure, and it is the agent's we
    want there) and speaks JSON."""

    def log_message(self, *args: Any) -> None:
        pass

    def raw_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        """A 200 whose body is server-sent events, written by the caller."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()


class Loopback:
    """`handler` served on a free port of 127.0.0.1 until `close()`; nothing leaves the machine."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)  # daemon handler threads
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Served:
    """`with Fake(...) as api:` serves `_handler()` on loopback while inside."""

    _server: Loopback | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.port

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._server = Loopback(self._handler())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()


@dataclass
class ScriptedServer(Served, Generic[S]):
    """A fake whose requests take the next step of one script (`take`); every request is kept
    in `requests`, so a test reads exactly what the model was sent."""

    steps: list[S]
    requests: list[Any] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _step: int = 0

    @property
    def spent(self) -> bool:
        """Whether every step of the script has been taken."""
        return self._step >= len(self.steps)

    def take(self, past_end: S) -> S:
        """The script's next step (the caller holds `_lock`), or `past_end` once it is spent, so
        the agent always finishes."""
        if self.spent:
            return past_end
        self._step += 1
        return self.steps[self._step - 1]
