"""A signal fired from plain code and awaited by tasks: the loader tells the view what arrived
without anyone polling for it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Signal:
    """Fired (from sync code, on the loop's thread) each time something changed; a task waits
    for the next firing, or until a condition of what changed holds."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def fire(self) -> None:
        # Waiters hold the event that is set; the next wait takes a fresh one.
        self._event.set()
        self._event = asyncio.Event()

    async def until(self, found: Callable[[], T | None], timeout: float) -> T | None:
        """`found()` once it is not None (asked now, then after each firing), or None when
        `timeout` seconds pass first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (value := found()) is None:
            left = deadline - loop.time()
            if left <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), left)
        return value
