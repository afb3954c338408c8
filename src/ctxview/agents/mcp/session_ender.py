"""The sessions an MCP server made live, ended once the server is gone, however it went.

A server ends its sessions itself when its stdin closes or a signal asks it to stop; but a host
may kill it outright before that is done (Codex 0.169.0 closes the server's stdin, signals its
process group with SIGTERM and then SIGKILL, and kills it when its own process exits: on a loaded
machine the server's closing had not run by then, and its session stayed "live" for good). So a
server that makes a session live starts this small process beside it, in a process group of its
own (a signal to the server's group misses it), and tells it over a pipe which sessions it holds
(`+id`) and which it ended itself (`-id`). The pipe's end (the kernel closes it with the server,
SIGKILL included) is the sign: every session still held and not ended is ended then, under its
lock, through the engine (`Session.end`), as the server would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

# How long the ender waits for a session's lock (a writer still at work in it) before it gives
# up on that session: the lock a server's closing takes has the same bound.
LOCK_WAIT = 5.0


class Ender:
    """The server's side: the process is started with the first session made live."""

    def __init__(self, store: Path) -> None:
        self._store = store
        self._pipe: IO[bytes] | None = None
        self._gone = False  # the process could not be started, or its pipe broke

    def holds(self, session_id: str) -> None:
        """`session_id` is live through this server: ended should the server die."""
        self._send(f"+{session_id}\n")

    def ended(self, session_id: str) -> None:
        """The server ended `session_id` itself: nothing left to do for it."""
        self._send(f"-{session_id}\n")

    def close(self) -> None:
        """The server is done (its sessions ended): the process ends with nothing to do."""
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()

    def _send(self, line: str) -> None:
        if self._gone:
            return
        try:
            if self._pipe is None:
                self._pipe = _start(self._store)
            self._pipe.write(line.encode())
            self._pipe.flush()
        except (OSError, ValueError) as exc:
            # The server goes on (a call never fails because of this); its own closing still
            # ends the session, and doctor lists why a killed one could not be.
            self._gone = True
            from ctxview.agents import failures

            failures.record(self._store, "mcp", f"the session ender could not run: {exc}")


def _start(store: Path) -> IO[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxview.agents.mcp.session_ender", os.fspath(store)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True, cwd="/",
    )  # fmt: skip
    assert proc.stdin is not None
    return proc.stdin


def held_sessions(lines: IO[bytes]) -> list[str]:
    """The sessions still held when the pipe ends, in the order they were first made live."""
    held: dict[str, None] = {}
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if line.startswith("+") and len(line) > 1:
            held[line[1:]] = None
        elif line.startswith("-"):
            held.pop(line[1:], None)
    return list(held)


async def end_sessions(store: Path, session_ids: list[str]) -> None:
    """End each session that is not ended yet, under its lock (recorded for doctor when one
    cannot be)."""
    from ctxview.agents import failures, live
    from ctxview.engine.session import Session
    from ctxview.store import Writer

    if not session_ids or not store.exists():
        return
    writer = await Writer.open(store)
    try:
        for sid in session_ids:
            try:
                async with live.session_lock(store, sid, timeout=LOCK_WAIT):
                    info = await writer.session_info(sid)
                    if info is None or info["ended"] is not None:
                        continue  # ended by the server after all (or never stored)
                    session = await Session.resume(writer, sid)
                    await session.end()
                    await writer.flush()
            except Exception as exc:
                failures.record(store, "mcp", f"a killed server's session {sid} could not be "
                                f"ended: {type(exc).__name__}: {exc}")  # fmt: skip
    finally:
        await writer.close()


def main() -> None:
    store = Path(sys.argv[1])
    sessions = held_sessions(sys.stdin.buffer)  # until the server's end of the pipe closes
    asyncio.run(end_sessions(store, sessions))


if __name__ == "__main__":
    main()
