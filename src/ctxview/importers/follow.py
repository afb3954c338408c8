"""Follow a transcript that is still being written: import what is appended, as it is appended.

One `FileImporter` per file is kept for the whole run, so each wake-up reads only the new bytes (from the
last byte read; a partial last line waits for its newline) and the parser's pending state stays
in memory. watchfiles wakes it within ~20 ms of a write; a slow poll is the backstop for
filesystems that report nothing (FIELD-NOTES: polling mode missed appends). Stopping and starting
again resumes from the offset saved in the session's data, without duplicates. A Claude Code
session's sub-agents (`<session>/subagents/agent-*.jsonl`, written while it runs) are followed
with it, each into its own session linked to the call that started it; so are the other chat
files of a Gemini session in its folder (`gemini_files.py`: a resume in a later minute leaves a
second file and goes on in the first; one of a `.json` document goes on in `<name>.jsonl`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from watchfiles import awatch

from ctxview.importers.gemini_files import alike, named_alike, session_of
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
    sessions: dict[Path, str] = {}  # the Gemini session each chat file alike names
    try:
        while not stop.is_set():
            changed.clear()  # before reading, so a write during the read wakes the next round
            files = [path, *sub_agents(path), *gemini_parts(path, sessions)]
            for f in files if path.exists() else []:
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


def gemini_parts(path: Path, sessions: dict[Path, str]) -> list[Path]:
    """The other chat files of the Gemini session of the chat file at `path` (`sessions`
    remembers whose each file is, once its header says)."""
    alike_files = named_alike(path)
    if not alike_files:
        return []
    for f in (path, *alike_files):
        if f not in sessions and (sid := session_of(f)) is not None:
            sessions[f] = sid
    own = sessions.get(path)
    return [f for f in alike_files if own is not None and sessions.get(f) == own]


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
            if any(p == target or p.startswith(agents) or (
                    os.path.dirname(p) == os.fspath(path.parent) and alike(os.path.basename(p), path))
                   for _, p in changes):  # fmt: skip
                changed.set()


async def _wait_any(changed: asyncio.Event, stop: asyncio.Event, timeout: float) -> None:
    waits = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
