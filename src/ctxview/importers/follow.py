"""Follow a transcript that is still being written: import what is appended, as it is appended.

One `FileImporter` per file is kept for the whole run, so each wake-up reads only the new bytes (from the
last byte read; a partial last line waits for its newline) and the parser's pending state stays
in memory. watchfiles wakes it within ~20 ms of a write; a slow poll is the backstop for
filesystems that report nothing (FIELD-NOTES: polling mode missed appends). Stopping and starting
again resumes from the offset saved in the session's data, without duplicates. A Claude Code
session's sub-agents (`<session>/subagents/agent-*.jsonl`, written while it runs) are followed
with it, each into its own session linked to the call that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from watchfiles import awatch

from ctxview.importers.runner import FileImporter, FileReport
from ctxview.store import Writer

POLL_SECONDS = 1.0


async def follow(
    writer: Writer,
    path: Path | str,
    *,
    on_batch: Callable[[FileReport], None] | None = None,
    stop: asyncio.Event | None = None,
    poll: float = POLL_SECONDS,
) -> None:
    """Import `path` now and then every append until `stop` is set (or the task is cancelled)."""
    path = Path(path).expanduser().resolve()
    stop = stop or asyncio.Event()
    changed = asyncio.Event()
    watcher = asyncio.create_task(_watch(path, changed, stop))
    importers: dict[Path, FileImporter] = {}
    try:
        while not stop.is_set():
            changed.clear()  # before reading, so a write during the read wakes the next round
            for f in [path, *sub_agents(path)] if path.exists() else []:
                importer = importers.setdefault(f, FileImporter(writer, f))
                async with writer.batch():
                    report = await importer.step(live=True)
                if on_batch and (report.lines or report.replaced or report.problems):
                    on_batch(report)
            await _wait_any(changed, stop, poll)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


def sub_agents(path: Path) -> list[Path]:
    """A Claude Code session's sub-agent transcripts (2.1.x layout), as they appear."""
    folder = path.with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


async def _watch(path: Path, changed: asyncio.Event, stop: asyncio.Event) -> None:
    target = os.fspath(path)
    agents = os.fspath(path.with_suffix("")) + os.sep
    with contextlib.suppress(RuntimeError, OSError):
        async for changes in awatch(path.parent, stop_event=stop, step=10, debounce=50,
                                    recursive=True, watch_filter=None):  # fmt: skip
            if any(p == target or p.startswith(agents) for _, p in changes):
                changed.set()


async def _wait_any(changed: asyncio.Event, stop: asyncio.Event, timeout: float) -> None:
    waits = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
