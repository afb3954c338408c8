"""The resident engine behind `ctxview hook`: one process per store, started by the first hook
that finds none, serving hook events over a Unix socket and exiting after `IDLE` seconds with
nothing to do. It keeps the imports warm and each session's engine state in memory (brought up
to date from the store before every step), so a hook's cost does not grow with the session.

One request per connection: a JSON line `{"event", "payload"}`, answered by `{"output": …}`
(the hook's JSON output, or null) or `{"error": …}` after recording the failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from . import failures
from .claude_hooks import HookEngine
from .hook_client import BUDGET, socket_path

IDLE = 900.0  # seconds without a hook before the engine exits
STEP_BUDGET = BUDGET - 0.5  # the engine gives up on a step before the client does


class Daemon:
    def __init__(self, store: Path) -> None:
        self.store = store
        self.engine = HookEngine(store)
        self.last = time.monotonic()
        self.server: asyncio.AbstractServer | None = None

    async def serve(self, path: Path) -> None:
        await self.engine.open()
        self.server = await asyncio.start_unix_server(self._client, path=str(path))
        os.chmod(path, 0o600)
        try:
            while time.monotonic() - self.last < IDLE:
                await asyncio.sleep(0.2)
        finally:
            self.server.close()
            with contextlib.suppress(OSError):
                path.unlink()
            await self.engine.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.last = time.monotonic()
        event, payload = "?", {}
        try:
            line = await reader.readline()
            request = json.loads(line)
            event, payload = str(request["event"]), request["payload"]
            if event == "_shutdown":  # tests and `ctxview doctor --stop` end the engine
                self.last = float("-inf")
                answer: dict[str, Any] = {"output": None}
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
                writer.close()
                return
            output = await asyncio.wait_for(self.engine.handle(event, payload), STEP_BUDGET)
            answer = {"output": output}
        except Exception as exc:  # recorded; the hook prints nothing
            what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if isinstance(exc, TimeoutError):
                what = f"the step took longer than {STEP_BUDGET:g} s"
            detail = {k: payload.get(k) for k in ("session_id", "tool_name", "tool_use_id")
                      if isinstance(payload, dict) and isinstance(payload.get(k), str)}  # fmt: skip
            failures.record(self.store, event, what, detail)
            answer = {"error": what}
        try:
            writer.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
            await writer.drain()
            writer.close()
        except OSError:
            pass
        self.last = time.monotonic()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ctxview-engine")
    parser.add_argument("--store", required=True)
    args = parser.parse_args(argv)
    store = Path(args.store).expanduser()
    path = socket_path(store)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    # One engine per store: whoever holds the lock serves; a second one started at the same
    # moment leaves at once.
    lock = os.open(str(path) + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # left by an engine that died
    try:
        asyncio.run(Daemon(store).serve(path))
    except Exception as exc:
        failures.record(store, "engine", f"{type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
