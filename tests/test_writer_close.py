"""A writer closes promptly whatever its lease renewal is doing (a session added just before the
close woke the renewing task; cancelling it then was swallowed on 3.11, and close never returned)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ctxview.engine.session import Session
from ctxview.store import Reader, Writer


async def test_close_right_after_a_new_session_returns(tmp_path: Path) -> None:
    for i in range(5):
        writer = await Writer.open(tmp_path / f"s{i}.db")
        await Session.start(writer, str(tmp_path), title="first")
        await asyncio.sleep(0.05)  # the renewing task is waiting for its next round
        second = await Session.start(writer, str(tmp_path), title="second")
        await asyncio.wait_for(writer.close(), 30)  # never returned before the fix
        reader = await Reader.open(tmp_path / f"s{i}.db")
        try:
            row = await reader.session(second.id)
        finally:
            await reader.close()
        assert row is not None
        assert row.lease_until is not None and row.lease_until <= time.time()  # not live any more


def test_a_demo_on_a_store_kept_locked_says_so_and_exits(tmp_path: Path) -> None:
    """A commit that fails at close (another process keeps the store locked past the busy
    timeout) left the writer's connection open, and its thread kept the process from exiting:
    the one-sentence error was printed, then the command hung."""
    import os
    import sqlite3
    import subprocess
    import sys

    store = tmp_path / "s.db"
    env = {**os.environ, "CTXVIEW_BUSY_TIMEOUT_MS": "300"}
    cmd = [
        sys.executable,
        "-m",
        "ctxview.cli",
        "--store",
        str(store),
        "demo",
        "--no-view",
        "--pace",
        "0",
    ]
    assert subprocess.run(cmd, capture_output=True, env=env, timeout=120).returncode == 0
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held for the whole run
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    finally:
        holder.rollback()
        holder.close()
    assert out.returncode != 0
    assert "is busy" in out.stderr and "Traceback" not in out.stderr
