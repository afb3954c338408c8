"""The resident engine behind Claude Code's hooks: one process per store, started by the first
command hook that finds none (SessionStart, `ctxview hook`), serving hook events over a Unix
socket (the command hooks) and over HTTP on 127.0.0.1 (Claude Code's http hooks, every tool call:
`hook_http.py`). It keeps the imports warm and each session's engine state in memory (brought up
to date from the store before every step), so a hook's cost does not grow with the session.

It runs under a small supervisor (the process `spawn` starts): should the engine die (killed,
a crash), the supervisor records it for `ctxview doctor` and starts it again at once, so the
next tool call is hooked again; the new engine first takes in what it missed (the transcripts of
the live hooked sessions, where Claude Code recorded each call it could not hook). The engine
exits after `IDLE` seconds with nothing to do and no Claude Code session open (`LONG_IDLE` when
one is open but silent), or at once when ctxview's code changed (the supervisor then starts the
new code).

A store it cannot open for writing (its folder immutable, its path under a regular file) does
not stop it: it serves on, every hook failing at once (recorded, beside the store or in the
private socket folder when the store's folder cannot take it; Claude Code keeps its own output),
and it tries the store again each `RETRY` seconds; so the supervisor has nothing to restart.

Unix socket, one request per connection: the event's name, a newline and the hook input as
Claude Code gave it; the answer is the hook's JSON output, or nothing (no output, or a failure
it recorded).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from ctxview.agents import endpoint, failures
from ctxview.agents.claude_code.hooks import HookEngine, hook_input
from ctxview.agents.engine_socket import private_folder
from ctxview.agents.hook_client import BUDGET, event_name, socket_path
from ctxview.agents.hook_http import HookServer
from ctxview.agents.hook_trace import Trace, Traces
from ctxview.agents.hosts import HOSTS, Host, host_of

IDLE = 900.0  # seconds without a hook, and no session open, before the engine exits
LONG_IDLE = 12 * 3600.0  # ... with a session open (one killed never said SessionEnd)
STEP_BUDGET = BUDGET - 0.5  # the engine gives up on a step before the client does
UPGRADED = 3  # the engine's exit status when ctxview's code changed: start the new code
UNSTARTED = 2  # ... when it could not start (a store it cannot open): not started again
RESTARTS = 5  # deaths within a minute after which the supervisor gives up
RETRY = 1.0  # seconds between two tries to open a store that could not be opened for writing


class StoreUnwritable(Exception):
    """The store cannot be opened for writing (the sentence says which and why)."""

    says_it_all = True  # failures.describe


class Daemon:
    def __init__(self, store: Path) -> None:
        self.store = store
        self.traces = Traces(store)
        self.engine = self._engine()
        self.last = time.monotonic()
        self.stopping = False
        self.code = _code_stamp()
        self.upgraded = False
        self.serving = False  # its servers are up (a failure before: not worth a restart)
        self.supervisor = os.getppid()  # the process that started this one, and restarts it
        self.server: asyncio.AbstractServer | None = None
        self.http: HookServer | None = None
        self.http_for: endpoint.Endpoint | None = None  # the endpoint last listened for
        self.http_stamp: tuple[int, int, int] | None = None  # its file when last read
        self.inode: int | None = None
        # Why the store could not be opened for writing, and when it was last tried: while it
        # cannot, every hook fails at once (recorded) instead of waiting out its budget for an
        # engine that never comes, and the store is tried again now and then.
        self.unwritable: str | None = None
        self.tried = 0.0
        self.missed: asyncio.Task[None] | None = None  # the open sessions' catch-up
        self.hosts: dict[str, Host] = {}  # the other agents' engines, made on first use

    def _engine(self) -> HookEngine:
        engine = HookEngine(self.store)
        engine.on_trace = self.traces.add
        return engine

    async def _open(self) -> str | None:
        """Open the store (a new engine over it), then take in what the open hooked sessions
        did while no engine served them; on failure, remember why and return it (else None)."""
        self.tried = time.monotonic()
        engine = self._engine()
        try:
            await engine.open()
            self.inode = os.stat(self.store).st_ino
        except Exception as exc:
            with contextlib.suppress(Exception):
                await engine.close()
            why = _why(exc)  # the store's own sentence names it, mostly
            self.unwritable = why if str(self.store) in why else f"the store {self.store}: {why}"
            return self.unwritable
        self.engine, self.unwritable = engine, None
        self.missed = asyncio.create_task(engine.catch_up_open())
        return None

    async def _ready(self) -> None:
        """The engine, over the store as it is now: a store removed or replaced since the engine
        opened it (a person starting afresh) is opened again, rather than written to as a file
        nobody can see any more; one that could not be opened is tried again after RETRY
        seconds. Raises StoreUnwritable at once otherwise."""
        if self.unwritable is not None:
            # What _open returns, not self.unwritable: the checker keeps it narrowed past the call.
            why = await self._open() if time.monotonic() - self.tried >= RETRY else self.unwritable
            if why is not None:
                raise StoreUnwritable(why)
            return
        try:
            now: int | None = os.stat(self.store).st_ino
        except OSError:
            now = None
        if now != self.inode:
            await self._stop_catch_up()
            await self._close_hosts()  # each holds the old store too: made again on first use
            await self.engine.close()
            if (why := await self._open()) is not None:
                raise StoreUnwritable(why)

    async def _close_hosts(self) -> None:
        hosts, self.hosts = self.hosts, {}
        for host in hosts.values():
            with contextlib.suppress(Exception):  # a store gone may fail its close: it is gone
                await host.close()

    async def _stop_catch_up(self) -> None:
        missed, self.missed = self.missed, None
        if missed is not None:
            missed.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await missed

    async def serve(self, path: Path) -> None:
        await self._open()
        if self.unwritable is not None:
            failures.record(self.store, "engine", self.unwritable)
        await self._listen_http()
        self.server = await asyncio.start_unix_server(self._client, path=str(path))
        os.chmod(path, 0o600)
        self.serving = True
        checked = time.monotonic()
        try:
            while not self.stopping and time.monotonic() - self.last < (
                    LONG_IDLE if self.engine.open_sessions else IDLE):  # fmt: skip
                await asyncio.sleep(0.2)
                self.traces.save()
                if time.monotonic() - checked >= 2.0:
                    checked = time.monotonic()
                    if _code_stamp() != self.code:  # ctxview was upgraded
                        self.stopping = self.upgraded = True
                    if self.http is None and self._endpoint_changed():
                        # An install made the endpoint after this engine started (Gemini's
                        # bash client reaches it over http only: until then, each of its hooks
                        # is a Python process).
                        await self._listen_http()
        finally:
            self.traces.save()
            self.server.close()
            if self.http is not None:
                self.http.close()
            await self._stop_catch_up()
            await self._close_hosts()
            # The store is released before the socket goes: a `stop` (which waits for this
            # process to end) or a client that finds no socket never meets an engine still
            # closing, whose checkpoint would write a store replaced meanwhile.
            try:
                await self.engine.close()
            finally:
                with contextlib.suppress(OSError):
                    path.unlink()

    def _endpoint_changed(self) -> bool:
        """Whether the store's endpoint file is new since it was last read (a stat, every 2 s;
        the file itself is read only when that changed)."""
        now = endpoint.stamp(self.store)
        if now is None or now == self.http_stamp:
            return False
        self.http_stamp = now
        return endpoint.load(self.store) not in (None, self.http_for)

    async def _listen_http(self) -> None:
        """Claude Code's http hooks (and pi's extension, Gemini's bash client), on the port
        `ctxview install` chose for this store; none when it made no endpoint (command hooks
        only)."""
        self.http_stamp = endpoint.stamp(self.store)
        found = self.http_for = endpoint.load(self.store)
        if found is None:
            return
        self.http = HookServer(str(self.store), found, self._respond, STEP_BUDGET, self._touch)
        try:
            await self.http.start()
        except OSError as exc:
            self.http = None
            uid = endpoint.listener_uid(found.port)
            who = "" if uid is None else (" (by this user's other program)" if uid == os.getuid()
                                          else f" (by user id {uid})")  # fmt: skip
            failures.record(self.store, "engine", f"cannot listen on {endpoint.LOOPBACK}:"
                            f"{found.port} for Claude Code's http hooks: {exc.strerror or exc}"
                            f"{who}; the tool calls keep Claude Code's own output")  # fmt: skip

    async def _respond(self, event: str, payload: dict[str, Any], trace: Trace
                       ) -> dict[str, Any] | None:  # fmt: skip
        await self._ready()
        name = host_of(event)
        if name is None:
            return await self.engine.respond(event, payload, trace)
        host = self.hosts.get(name)
        if host is None:
            host = self.hosts[name] = HOSTS[name](self.engine)
        return await host.respond(event, payload, trace)

    def _touch(self) -> None:
        self.last = time.monotonic()

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
            if event == "_ping":  # started, and answering: nothing else to do
                answer = b""
            elif event == "_shutdown":  # tests (and a person) end the engine
                self.stopping = True
                # `stop` waits for these processes to end: the engine and its supervisor
                # (while it is still the engine's parent).
                pids = [os.getpid(), *([self.supervisor] if os.getppid() == self.supervisor
                                       else [])]  # fmt: skip
                answer = " ".join(map(str, pids)).encode()
            else:
                payload = hook_input(raw)
                if host_of(event) is None:  # Claude Code's: its own name for the event
                    event = str(payload.get("hook_event_name") or event)
                trace.event, trace.tool = event, str(payload.get("tool_name") or "")
                await self._ready()
                trace.lap("parse")
                output = await asyncio.wait_for(self._respond(event, payload, trace),
                                                STEP_BUDGET)  # fmt: skip
                if output is not None:
                    answer = json.dumps(output, ensure_ascii=False).encode()
        except Exception as exc:  # recorded; the hook prints nothing
            what = failures.describe(exc, STEP_BUDGET)
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


def _why(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__


def _code_stamp(root: Path | None = None) -> float:
    """The newest modification time of the agents' code (the hook protocol, and each agent's
    engine in its own folder: agents/claude_code/, ...), to notice an upgrade; about a
    millisecond."""
    newest = 0.0
    for folder, _dirs, files in os.walk(root or Path(__file__).resolve().parent):
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime)
    return newest


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
    code = supervise(store, path)
    if code == UNSTARTED:
        return 1
    if code == UPGRADED:  # the new code, in a new process (the lock is closed by the exec)
        os.execv(sys.executable, [sys.executable, "-m", "ctxview.agents.daemon",
                                  "--store", str(store)])  # fmt: skip
    return code


def supervise(store: Path, path: Path) -> int:
    """Run the engine in a child process, and again when it dies; its exit status once it
    exits by itself (idle, stopped, upgraded)."""
    deaths: list[float] = []
    while True:
        pid = os.fork()
        if pid == 0:  # the engine (it inherits the lock: no second engine while it runs)
            os._exit(_engine(store, path))
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, UPGRADED, UNSTARTED):
            return os.WEXITSTATUS(status)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            how = f"was ended by signal {sig} ({signal.Signals(sig).name})"
        else:
            how = f"exited with status {os.WEXITSTATUS(status)}"
        now = time.monotonic()
        deaths = [t for t in deaths if now - t < 60] + [now]
        if len(deaths) > RESTARTS:
            failures.record(store, "engine", f"the hook engine (pid {pid}) {how}, the "
                            f"{len(deaths)}th time in a minute: not started again (the next "
                            "Claude Code session starts it)")  # fmt: skip
            return 1
        failures.record(store, "engine", f"the hook engine (pid {pid}) {how}; started again "
                        "(tool calls meanwhile kept Claude Code's own output)")  # fmt: skip
        time.sleep(0.05 * 2 ** (len(deaths) - 1))


def _engine(store: Path, path: Path) -> int:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # left by an engine that died
    daemon = Daemon(store)
    try:
        asyncio.run(daemon.serve(path))
    except Exception as exc:
        failures.record(store, "engine", f"{type(exc).__name__}: {exc}")
        return 1 if daemon.serving else UNSTARTED
    return UPGRADED if daemon.upgraded else 0


if __name__ == "__main__":
    raise SystemExit(main())
