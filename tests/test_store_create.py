"""A new store appears whole: several processes making it at once, a reader looking meanwhile.

A store is built beside its place and hard-linked in (src/ctxview/store/fresh.py). Before, the first
writer made an empty file and filled it in place: a reader that came then was told the store
"is an empty file", and a second writer raced the first through SQLite's switch to WAL mode and
the schema's creation, waiting on their locks (on a busy machine, past the busy timeout: CI saw
`test_several_processes_write_one_store` fail so).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxview.store import Reader, StoreError, Writer, fresh, schema

ROOT = Path(__file__).resolve().parent.parent

# A writer that opens the store and at once keeps its write lock a while: a second writer that
# must wait for that lock to open the store fails, its busy timeout being short (below).
OPENER = r"""
import asyncio, sys, time
from pathlib import Path
from ctxview.store import Writer
from ctxview.store.connect import on_thread

async def main(store):
    writer = await Writer.open(Path(store))
    print("open", flush=True)
    def hold(conn):
        conn.execute("PRAGMA busy_timeout = 20000")  # the holders wait for one another
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO meta (key, value) VALUES ('held-by-' || ?, 'x')", (sys.argv[2],))
        time.sleep(0.6)
        conn.execute("COMMIT")
    await on_thread(writer._conn, hold)
    await writer.close()

asyncio.run(main(sys.argv[1]))
"""


def looks(store: Path, stop: float) -> list[str]:
    """What a reader is told each time it finds a file at `store`, until `stop`."""
    said: list[str] = []

    async def go() -> None:
        while time.monotonic() < stop:
            if os.path.exists(store):
                try:
                    async with await Reader.open(store):
                        pass
                except StoreError as exc:
                    said.append(str(exc))
            await asyncio.sleep(0)

    asyncio.run(go())
    return said


@pytest.mark.parametrize("round_", range(6))
def test_writers_making_a_store_at_once_never_wait_and_no_reader_sees_it_half_made(
    tmp_path: Path, round_: int
) -> None:
    script = tmp_path / "opener.py"
    script.write_text(OPENER)
    store = tmp_path / "shared" / "store.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXVIEW_BUSY_TIMEOUT_MS": "150"}
    argv = [[sys.executable, str(script), str(store), str(n)] for n in range(4)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    procs = [subprocess.Popen(a, cwd=ROOT, env=env, **pipes) for a in argv]
    said = looks(store, time.monotonic() + 0.5)
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        # Each open is lock-free: it did not wait behind another process's 0.6 s write lock.
        assert p.returncode == 0 and out == "open\n", err
    assert said == [], said
    with sqlite3.connect(store) as conn:
        held = conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'held-by-%'").fetchone()
        assert held[0] == 4
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert sorted(p.name for p in store.parent.iterdir() if ".new-" in p.name) == []
    assert (store.stat().st_mode & 0o777) == 0o600


async def test_a_new_store_is_private_current_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    old = os.umask(0)
    try:
        writer = await Writer.open(store)
    finally:
        os.umask(old)
    await writer.close()
    assert (store.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]
    with sqlite3.connect(store) as conn:
        assert schema.check(conn) == schema.SCHEMA_VERSION
        assert conn.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID


async def test_without_hard_links_the_store_is_made_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_link(src: object, dst: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(fresh.os, "link", no_link)
    store = tmp_path / "s.db"
    writer = await Writer.open(store)
    await writer.close()
    assert (store.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]
    async with await Reader.open(store) as reader:
        assert await reader.sessions() == []


def test_a_file_left_by_a_killed_maker_is_removed_once_stale(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    stale = tmp_path / ".s.db.new-1-deadbeef"
    recent = tmp_path / ".s.db.new-2-cafef00d"
    stale.write_bytes(b"")
    recent.write_bytes(b"")
    an_hour_ago = time.time() - fresh.STALE_SECONDS - 60
    os.utime(stale, (an_hour_ago, an_hour_ago))
    fresh.make_if_missing(store)
    assert not stale.exists()
    assert recent.exists()  # another process may be making the store right now
    assert store.exists()
