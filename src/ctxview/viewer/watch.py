"""Watching the store for commits by other processes.

watchfiles on the store's folder (not recursive) with a small `step`: in WAL mode a commit shows
up as a change of `store.db-wal` (a checkpoint changes `store.db`; `-shm` is never reported, so
it is ignored). A slow `PRAGMA data_version` poll on the reader's own connection is the backstop
for file systems where notification is missed (polling mode, network disks).

The watcher also tells when the file at the store's path is no longer the one the reader has
open (deleted, moved away, replaced, renamed over: its device and inode changed); the app then
says so and follows the new file. Each change notification and each poll looks, with one stat.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from watchfiles import Change, awatch

from ctxview.store import Reader
from ctxview.store.connect import identity

STEP_MS = 16
DEBOUNCE_MS = 200
POLL_SECONDS = 1.0


def store_filter(store: Path) -> Callable[[Change, str], bool]:
    """Accept changes to the store file and its -wal only."""
    names = {store.name, store.name + "-wal"}

    def accept(_change: Change, path: str) -> bool:
        return Path(path).name in names

    return accept


class StoreWatcher:
    """Calls `notify()` soon after anything is committed to the store by another connection."""

    def __init__(
        self,
        store: Path,
        reader: Reader,
        notify: Callable[[], None],
        poll: float = POLL_SECONDS,
        moved: Callable[[], None] | None = None,
    ) -> None:
        self.store = Path(store).resolve()
        self.reader = reader  # the app puts the new one here when it follows a new file
        self.notify = notify
        self.moved = moved
        self.poll_seconds = poll
        self._stop = asyncio.Event()
        self._version: int | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._watch(), name="ctxview-watch"),
            asyncio.create_task(self._poll(), name="ctxview-poll"),
        ]

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    async def follow(self, reader: Reader) -> None:
        """Watch through a new reader (the app opened the file now at the path). Its baseline is
        taken now, before the screens load from it, so a commit in between is not missed."""
        self.reader = reader
        try:
            self._version = await reader.data_version()
        except Exception:
            self._version = None

    def look(self) -> bool:
        """Tell `moved` when the file at the path is not the one the reader has open."""
        if self.moved is None or identity(self.store) == self.reader.identity:
            return False
        self.moved()
        return True

    async def _watch(self) -> None:
        while not self._stop.is_set():
            if not self.store.parent.is_dir():  # the folder went too: the poll looks meanwhile
                await asyncio.sleep(self.poll_seconds)
                continue
            try:
                async for _changes in awatch(
                    self.store.parent,
                    watch_filter=store_filter(self.store),
                    step=STEP_MS,
                    debounce=DEBOUNCE_MS,
                    recursive=False,
                    stop_event=self._stop,
                    rust_timeout=1000,
                    yield_on_timeout=False,
                ):
                    if not self.look():
                        self.notify()
            except (OSError, RuntimeError):
                pass  # the folder was removed under the watch
            if not self._stop.is_set():
                await asyncio.sleep(self.poll_seconds)

    async def _poll(self) -> None:
        while not self._stop.is_set():
            if self.look():
                self._version = None  # a new reader: its data_version starts afresh
            else:
                reader = self.reader
                try:
                    version = await reader.data_version()
                except Exception:  # the reader was closed under us: the app stops, or follows
                    version = None
                if reader is self.reader:
                    if None not in (self._version, version) and version != self._version:
                        self.notify()
                    self._version = version
            await asyncio.sleep(self.poll_seconds)
