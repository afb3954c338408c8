"""Follow a transcript that is still being written: import what is appended, as it is appended.

One `FileImporter` per file is kept for the whole run, so each wake-up reads only the new bytes (from the
last byte read; a partial last line waits for its newline) and the parser's pending state stays
in memory. watchfiles wakes it within ~20 ms of a write; a slow poll is the backstop for
filesystems that report nothing (FIELD-NOTES: polling mode missed appends). Stopping and starting
again resumes from the offset saved in the session's data, without duplicates. A Claude Code
session's sub-agents (`<session>/subagents/agent-*.jsonl`, written while it runs) are followed
with it, each into its own session linked to the call that started it; so are a Gemini session's
(`chats/<session id>/<agent id>.jsonl`, begun as each `invoke_agent` call starts), and the other
chat files of a Gemini session in its folder (`gemini_files.py`: a resume in a later minute leaves
a second file and goes on in the first; one of a `.json` document goes on in `<name>.jsonl`).
The folders are listed again only when they changed (`Folders`): a Gemini `chats/` folder holds
every session of its project, and a follow wakes at each write of its own session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from watchfiles import awatch

from ctxview.files.regular import NotRegularFile, stamp
from ctxview.importers.detect import NotTranscript
from ctxview.importers.gemini_files import agents_folder, alike, session_of
from ctxview.importers.runner import FileImporter, FileReport
from ctxview.store import Writer

POLL_SECONDS = 1.0
# A listing made this soon after the folder's last change is made again at the next look: an
# entry added later in the same tick of the filesystem's clock leaves the folder's mtime as it
# was (the same reasoning as git's racy index).
RACY_NS = 2_000_000_000


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
    # The folders whose writes wake the follow, beside the file's own: its Claude Code
    # sub-agents'; a Gemini session's sub-agents' once its header names the session.
    wakes = {os.fspath(path.with_suffix("")) + os.sep}
    watcher = asyncio.create_task(_watch(path, wakes, changed, stop))
    importers: dict[Path, FileImporter] = {}
    sessions: dict[Path, str] = {}  # the Gemini session each chat file alike names
    folders = Folders()
    refused: dict[Path, tuple[int, int, int] | None] = {}  # files beside it that are none
    try:
        while not stop.is_set():
            changed.clear()  # before reading, so a write during the read wakes the next round
            files = [path, *sub_agents(path, folders), *gemini_files(path, sessions, folders)]
            if (sid := sessions.get(path)) is not None:
                wakes.add(os.fspath(agents_folder(path, sid)) + os.sep)
            for f in files if path.exists() else []:
                if f in refused and refused[f] == stamp(f):
                    continue
                importer = importers.setdefault(f, FileImporter(writer, f))
                try:
                    async with writer.batch():
                        report = await importer.step(live=True)
                except (NotTranscript, NotRegularFile, FileNotFoundError) as exc:
                    if f == path:
                        raise  # the file asked for: the command says why
                    # Another file found beside it (a folder, a FIFO, a stranger named like a
                    # sub-agent's): said once, tried again only once it changed.
                    refused[f] = stamp(f)
                    importers.pop(f, None)
                    report = FileReport(str(f), refused=str(exc).removeprefix(f"{f} "))
                if on_batch and (report.lines or report.replaced or report.problems
                                 or report.refused):  # fmt: skip
                    on_batch(report)
            await _wait_any(changed, stop, poll)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


class Folders:
    """The entries of folders, listed again only when a folder changed since (its mtime moved,
    or the last listing was within `RACY_NS` of that mtime)."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, int, list[Path]]] = {}  # mtime, listed at, entries

    def entries(self, folder: Path) -> list[Path]:
        """The folder's entries, sorted; none when it is not a folder (or not yet)."""
        try:
            st = os.stat(folder)
        except (OSError, ValueError):
            return []
        if not stat.S_ISDIR(st.st_mode):
            return []
        known = self._seen.get(folder)
        if known is not None and known[0] == st.st_mtime_ns and known[1] - known[0] > RACY_NS:
            return known[2]
        listed = time.time_ns()
        try:
            found = sorted(folder.iterdir())
        except OSError:
            return []
        self._seen[folder] = (st.st_mtime_ns, listed, found)
        return found


def gemini_files(path: Path, sessions: dict[Path, str], folders: Folders) -> list[Path]:
    """The other files of the Gemini session of the chat file at `path`: its other chat files
    in the folder, then its sub-agents' (`sessions` remembers whose each chat file is, once its
    header says)."""
    if not alike(path.name, path):
        return []  # not named as Gemini names a chat file
    if path not in sessions and (sid := session_of(path)) is not None:
        sessions[path] = sid
    own = sessions.get(path)
    if own is None:
        return []
    parts = []
    for f in folders.entries(path.parent):
        if f != path and alike(f.name, path):
            if f not in sessions and (other := session_of(f)) is not None:
                sessions[f] = other
            if sessions.get(f) == own:
                parts.append(f)
    agents = [f for f in folders.entries(agents_folder(path, own)) if f.suffix == ".jsonl"]
    return [*parts, *agents]


def sub_agents(path: Path, folders: Folders | None = None) -> list[Path]:
    """A Claude Code session's sub-agent transcripts (2.1.x layout), as they appear."""
    folder = path.with_suffix("") / "subagents"
    if folders is None:
        return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []
    return [f for f in folders.entries(folder) if f.name.startswith("agent-")
            and f.name.endswith(".jsonl")]  # fmt: skip


async def _watch(path: Path, wakes: set[str], changed: asyncio.Event, stop: asyncio.Event) -> None:
    target, folder = os.fspath(path), os.fspath(path.parent)
    with contextlib.suppress(RuntimeError, OSError):
        async for changes in awatch(path.parent, stop_event=stop, step=10, debounce=50,
                                    recursive=True, watch_filter=None):  # fmt: skip
            if any(p == target or any(p.startswith(w) for w in wakes) or (
                    os.path.dirname(p) == folder and alike(os.path.basename(p), path))
                   for _, p in changes):  # fmt: skip
                changed.set()


async def _wait_any(changed: asyncio.Event, stop: asyncio.Event, timeout: float) -> None:
    waits = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
