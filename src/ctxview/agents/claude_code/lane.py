"""One Claude Code session tree's lane in the hook engine: its steps computed one at a time, the
work after each tool call's answer done in order, under the tree's lock."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ctxview.agents import live


@dataclass
class Lane:
    """One session tree's steps in this process (the session and its sub-agents: one id
    counter). They are computed one at a time (`compute`); what comes after a tool call's answer
    (the transcript, the call's events) is queued and done in order by the lane's worker, which
    holds the tree's flock (keyed by its root) from the first step until the queue is empty. So
    the next call of the tree is answered while the last one still waits for Claude Code's
    record of it, and no other process writes the tree in between (the MCP server's recall
    waits for that lock)."""

    compute: asyncio.Lock = field(default_factory=asyncio.Lock)
    work: deque[Callable[[], Awaitable[None]]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
    barrier: asyncio.Future[None] | None = None  # the last queued event that is not a call's
    sessions: set[str] = field(default_factory=set)  # the tree's sessions it served meanwhile
    _lock: contextlib.AbstractAsyncContextManager[None] | None = None

    async def take(self, store: Path, root: str) -> None:
        lock = live.session_lock(store, root)
        await lock.__aenter__()
        self._lock = lock

    async def give_back(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            await lock.__aexit__(None, None, None)
