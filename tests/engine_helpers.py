"""Helpers for the engine's tests: a real workspace and a real store, nothing mocked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from ctxview.store.writer import Writer

T = TypeVar("T")


@asynccontextmanager
async def workspace_and_writer(
    tmp: Path, files: dict[str, str], store: str = "s.db"
) -> AsyncIterator[tuple[Path, Writer]]:
    """A workspace `tmp/ws` holding `files` (name -> UTF-8 text) and a writer on a new store
    `tmp/<store>`, closed on leaving."""
    ws = tmp / "ws"
    ws.mkdir()
    for name, text in files.items():
        (ws / name).write_text(text, encoding="utf-8")
    async with await Writer.open(tmp / store) as writer:
        yield ws, writer


async def with_heartbeat(work: Awaitable[T]) -> tuple[T, int, float]:
    """(the work's value, heartbeats while it ran, the longest gap between two)."""
    gaps: list[float] = []

    async def beat() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    task = asyncio.ensure_future(beat())
    await asyncio.sleep(0)
    try:
        value = await work
    finally:
        task.cancel()
    return value, len(gaps), max(gaps, default=0.0)
