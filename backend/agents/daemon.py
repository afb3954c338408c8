"""The resident engine behind `ctxview hook`: one process per store, started by the first hook
that finds none, serving hook events over a Unix socket and exiting after `IDLE` seconds with
nothing to do. It keeps the imports warm and each session's engine state in memory (brought up
to date from the store before every step), so a hook's cost does not grow with the session.

One request per connection: the event's name, a newline and the hook input as Claude Code gave
it; the answer is the hook's JSON output, or nothing (no output, or a failure it recorded).
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

from . import failures
from .claude_hooks import HookEngine
from .hook_client import BUDGET, event_name, private_folder, socket_path
from .hook_trace import Trace, Traces

IDLE = 900.0  # seconds without a hook before the engine exits
STEP_BUDGET = BUDGET - 0.5  # the engine gives up on a step before the client does


class Daemon:
    def __init__(self, store: Path) -> None:
        self.store = store
        self.traces = Traces(store)
        self.engine = self._engine()
        self.last = time.monotonic()
        self.stopping = False
        self.code = _code_stamp()
        self.server: asyncio.AbstractServer | None = None

    def _engine(self) -> HookEngine:
        engine = HookEngine(self.store)
        engine.on_trace = self.traces.add
        return engine

    async def _same_store(self) -> None:
        """A store removed or replaced since the engine opened it (a person starting afresh)
        is opened again, rather than written to as a file nobody can see any more."""
        try:
            now = os.stat(self.store).st_ino
        except FileNotFoundError:
            now = None
        if now != self.inode:
            await self.engine.close()
            self.engine = self._engine()
            await self.engine.open()
            self.inode = os.stat(self.store).st_ino

    async def serve(self, path: Path) -> None:
        await self.engine.open()
        self.inode: int | None = os.stat(self.store).st_ino
        self.server = await asyncio.start_unix_server(self._client, path=str(path))
        os.chmod(path, 0o600)
        try:
            while time.monotonic() - self.last < IDLE and not self.stopping:
                await asyncio.sleep(0.2)
                self.traces.save()
        finally:
            self.traces.save()
            self.server.close()
            # The store is released before the socket goes: a `stop` (which waits for this
            # process to end) or a client that finds no socket never meets an engine still
            # closing, whose checkpoint would write a store replaced meanwhile.
            try:
                await self.engine.close()
            finally:
                with contextlib.suppress(OSError):
                    path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.last = time.monotonic()
        event, raw = "?", b""
        answer = b""
        trace = Trace(transport="command")
        try:
            request = await reader.read()  # the client shuts its side when it has sent all
            trace.lap("read")
            head, _, raw = request.partition(b"\n")
            event = event_name(head.decode())
            if event == "_shutdown":  # tests (and a person) end the engine
                self.stopping = True
                answer = str(os.getpid()).encode()  # `stop` waits for this process to end
            else:
                payload = json.loads(raw)
                if not isinstance(payload, dict):
                    raise ValueError("the hook input is not a JSON object")
                event = str(payload.get("hook_event_name") or event)
                trace.event, trace.tool = event, str(payload.get("tool_name") or "")
                await self._same_store()
                trace.lap("parse")
                output = await asyncio.wait_for(self.engine.respond(event, payload, trace),
                                                STEP_BUDGET)  # fmt: skip
                if output is not None:
                    answer = json.dumps(output, ensure_ascii=False).encode()
        except Exception as exc:  # recorded; the hook prints nothing
            what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if isinstance(exc, TimeoutError):
                what = f"the step took longer than {STEP_BUDGET:g} s"
            trace.error = what
            event, detail = failures.about(raw, event)
            failures.record(self.store, event, what, detail)
        sending = time.perf_counter()
        try:
            writer.write(answer)
            await writer.drain()
            writer.close()
        except OSError:
            pass
        trace.add("answer", (time.perf_counter() - sending) * 1000)
        trace.sent()
        self.last = time.monotonic()
        if _code_stamp() != self.code:  # ctxview was upgraded: the next hook starts a new one
            self.stopping = True


def _code_stamp() -> float:
    """The newest modification time of this folder's code (the hook protocol and the engine's
    face), to notice an upgrade; about a millisecond."""
    with os.scandir(Path(__file__).resolve().parent) as it:
        return max(e.stat().st_mtime for e in it if e.name.endswith(".py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ctxview-engine")
    parser.add_argument("--store", required=True)
    args = parser.parse_args(argv)
    store = Path(args.store).expanduser()
    path = socket_path(store)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    private_folder(str(path.parent))  # never serve from a folder someone else could reach
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
