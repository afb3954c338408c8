"""The store watcher: watchfiles sees another process's commit, and the data_version poll is a
backstop that sees it without any file notification."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from watchfiles import Change

from ctxview.store import Reader, Writer
from ctxview.store.records import Event
from ctxview.viewer.watch import StoreWatcher, store_filter

COMMIT = """
import asyncio, sys
from ctxview.store import Writer
from ctxview.store.records import Event
async def main():
    w = await Writer.open(sys.argv[1])
    await w.append("s", [Event(ts=1.0, kind="message", role="user", text="hi")])
    await w.close()
asyncio.run(main())
"""


async def _store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    writer = await Writer.open(path)
    await writer.create_session("s", next_rid=0x1000, started=0.0)
    await writer.append("s", [Event(ts=0.0, kind="message", role="user", text="first")])
    await writer.close()
    return path


async def _wait(flag: list[float], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not flag and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def test_filter_takes_the_db_and_its_wal_only(tmp_path: Path) -> None:
    accept = store_filter(tmp_path / "store.db")
    assert accept(Change.modified, str(tmp_path / "store.db"))
    assert accept(Change.modified, str(tmp_path / "store.db-wal"))
    assert not accept(Change.modified, str(tmp_path / "store.db-shm"))
    assert not accept(Change.modified, str(tmp_path / "other.db-wal"))


async def test_watchfiles_sees_another_process_commit(tmp_path: Path) -> None:
    path = await _store(tmp_path)
    reader = await Reader.open(path)
    seen: list[float] = []
    watcher = StoreWatcher(path, reader, lambda: seen.append(time.monotonic()), poll=3600)
    watcher.start()
    try:
        # The watch is set up in its own thread, with nothing to say when it is: a commit made
        # before that is not seen (and the poll is an hour), so commit again until one is.
        for _ in range(5):
            seen.clear()
            subprocess.run([sys.executable, "-c", COMMIT, str(path)], check=True, timeout=60,
                           cwd=Path(__file__).resolve().parents[2])  # fmt: skip
            await _wait(seen, 10.0)
            if seen:
                break
        assert seen, "no notification from watchfiles"
    finally:
        await watcher.stop()
        await reader.close()


async def test_data_version_poll_is_a_backstop(tmp_path: Path) -> None:
    path = await _store(tmp_path)
    reader = await Reader.open(path)
    seen: list[float] = []
    watcher = StoreWatcher(path, reader, lambda: seen.append(time.monotonic()), poll=0.05)
    poll = asyncio.create_task(watcher._poll())  # the poll alone, no file notification
    try:
        await asyncio.sleep(0.2)
        assert not seen
        subprocess.run([sys.executable, "-c", COMMIT, str(path)], check=True, timeout=60,
                       cwd=Path(__file__).resolve().parents[2])  # fmt: skip
        await _wait(seen, 30.0)  # 50 ms polls: the bound is for a hang only
        assert seen, "the data_version poll missed a commit"
    finally:
        watcher._stop.set()
        await poll
        await reader.close()
