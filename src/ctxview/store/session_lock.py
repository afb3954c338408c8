"""The lock that keeps two writers of one session tree (a hook, the MCP server, an import beside
them) from giving the same id twice: one flock file per session in a folder beside the store,
and the wait of an import that meets a call a hook may be storing. File locking beside the
store, no SQL: a hook's and an MCP call's hot path."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from ctxview.store import paths, probe

# The sessions whose lock this process holds now, as (store, session id): an import run inside
# a hook's step (which holds it) must not wait for it.
_HELD: set[tuple[str, str]] = set()


class LockTimeout(Exception):
    """Another writer held the session's lock for longer than we may wait."""


def lock_path(store: Path | str, session_id: str) -> Path:
    """One small lock file per session, in a folder beside the store."""
    digest = hashlib.sha1(session_id.encode()).hexdigest()[:16]
    return Path(f"{store}.locks") / digest


@asynccontextmanager
async def session_lock(
    store: Path | str, session_id: str, timeout: float = 1.5
) -> AsyncIterator[None]:
    """Hold the session's write lock (flock: released by the kernel if the holder dies). The
    wait for another process's lock lets the event loop go on: the hook daemon and the MCP
    server serve other sessions, and their own closing, on the same loop."""
    fd = _open_lock(store, session_id)
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                raise LockTimeout(f"session {session_id} is locked by another writer")
            await asyncio.sleep(0.005)
        key = (os.fspath(store), session_id)
        _HELD.add(key)
        try:
            yield
        finally:
            _HELD.discard(key)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class HookPending(Exception):
    """An import met a result of a hooked session that is not stored, while another process
    may hold the lock of the session's tree (`root`, the lock the hook engine and the MCP
    server take for a session and its sub-agents) to store it (Claude Code's hook answers
    first and stores the call after). The import rolls its chunk back, waits for the lock
    (holding none of the store's) and reads the chunk again."""

    def __init__(self, store: Path | str, session_id: str, call_id: str,
                 root: str | None = None) -> None:  # fmt: skip
        super().__init__(f"the hook may be storing {call_id} in {session_id}")
        self.store, self.session_id, self.call_id = store, session_id, call_id
        self.root = root or session_id

    async def wait(self, timeout: float = 5.0) -> None:
        """Until the call is stored, or nobody holds the tree's lock (a hook would have stored
        it by then), or `timeout` (Claude Code's own bound on a hook) passed: then its hook
        failed, and the call is imported as Claude Code sent it."""
        fd = _open_lock(self.store, self.root)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if _try_lock(fd):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    return
                if probe.call_stored(self.store, self.session_id, self.call_id):
                    return
                await asyncio.sleep(0.02)
        finally:
            os.close(fd)


def lock_free(store: Path | str, session_id: str) -> bool:
    """Whether nobody holds the session's lock at this moment (taken and given back at once)."""
    fd = _open_lock(store, session_id)
    try:
        if not _try_lock(fd):
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def held_here(store: Path | str, session_id: str) -> bool:
    """Whether this process holds the session's lock now."""
    return (os.fspath(store), session_id) in _HELD


def _open_lock(store: Path | str, session_id: str) -> int:
    path = lock_path(store, session_id)
    if not path.parent.parent.exists():
        # The store's folder is not made yet (an MCP call before anything wrote the store):
        # made as the store's own would be, so the call goes on and creates the store.
        paths.prepare(Path(store))
    path.parent.mkdir(mode=0o700, exist_ok=True)
    return os.open(path, os.O_CREAT | os.O_RDWR, 0o600)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
