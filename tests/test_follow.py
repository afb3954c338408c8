"""`follow` on a real growing file: lines appended while it runs reach the store, a partial line
waits for its end, and a restart carries on without duplicates. In-process and as `ctxview follow`."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ctxview.importers.follow import follow
from ctxview.importers.runner import FileReport
from ctxview.store import Reader, Writer
from ctxview.store.schema import StoreError

FIXTURE = Path(__file__).parent / "fixtures" / "import" / "claude_session.jsonl"
SID = "cc-11111111-2222-3333-4444-555555555555"
LINES = FIXTURE.read_bytes().splitlines(keepends=True)


async def wait_for_results(store: Path, n: int, timeout: float = 60.0) -> int:
    """Poll the store (as a viewer would) until the session has `n` results (the bound is for
    a loaded machine, where the `ctxview follow` process alone can take seconds to start)."""
    deadline = time.monotonic() + timeout
    got = -1
    while time.monotonic() < deadline:
        if store.exists():
            try:
                async with await Reader.open(store) as reader:
                    row = await reader.session(SID)
                    got = row.results if row else -1
            except StoreError:
                got = -1  # the follower is creating the store (an empty database for a moment)
            if got == n:
                return got
        await asyncio.sleep(0.05)
    return got


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)
        f.flush()


async def test_follow_imports_appended_lines(tmp_path: Path) -> None:
    src, store = tmp_path / "live.jsonl", tmp_path / "s.db"
    src.write_bytes(b"".join(LINES[:11]))  # up to the first read's result: 1 result
    writer = await Writer.open(store)
    stop = asyncio.Event()
    batches: list[FileReport] = []
    task = asyncio.create_task(follow(writer, src, on_batch=batches.append, stop=stop, poll=5.0))
    try:
        assert await wait_for_results(store, 1) == 1
        append(src, b"".join(LINES[11:17]) + LINES[17][:30])  # a result, then half a line
        assert await wait_for_results(store, 2) == 2
        append(src, LINES[17][30:] + b"".join(LINES[18:22]))
        assert await wait_for_results(store, 4) == 4
        append(src, b"".join(LINES[22:]))
        assert await wait_for_results(store, 13) == 13
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await writer.close()
    assert len(batches) >= 4 and all(b.session == SID for b in batches)
    assert [p.line for b in batches for p in b.problems] == [13, 14, 15, 16]


async def test_follow_restart_no_duplicates(tmp_path: Path) -> None:
    src, store = tmp_path / "live.jsonl", tmp_path / "s.db"
    src.write_bytes(b"".join(LINES[:25]))
    for round_ in range(2):
        writer = await Writer.open(store)
        stop = asyncio.Event()
        task = asyncio.create_task(follow(writer, src, stop=stop, poll=5.0))
        try:
            want = 5 if round_ == 0 else 13
            assert await wait_for_results(store, want) == want
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
            await writer.close()
        append(src, b"".join(LINES[25:]))  # written while nobody follows
    async with await Reader.open(store) as reader:
        events = await reader.events(SID)
    rids = [e.rid for e in events if e.kind == "result"]
    assert len(rids) == 13 and len(set(rids)) == 13


def test_ctxview_follow_command(tmp_path: Path) -> None:
    src, store = tmp_path / "live.jsonl", tmp_path / "s.db"
    src.write_bytes(b"".join(LINES[:11]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxview.cli", "follow", "--no-view", "--store", str(store),
         str(src)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert asyncio.run(wait_for_results(store, 1)) == 1
        append(src, b"".join(LINES[11:]))
        assert asyncio.run(wait_for_results(store, 13)) == 13
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"Following {src}" in err
    assert f"→ {SID}" in err and "4 records skipped" in err


async def test_follow_takes_sub_agents_along(tmp_path: Path) -> None:
    """A sub-agent file that appears in `<session>/subagents/` while the session is followed
    becomes its own session, linked to the Task call (whose result comes after the agent starts)."""
    project = FIXTURE.parent / "project"
    agent_src = next(project.rglob("agent-a1b2c3d.jsonl"))
    src, store = tmp_path / f"{SID[3:]}.jsonl", tmp_path / "s.db"
    src.write_bytes(b"".join(LINES[:11]))
    writer = await Writer.open(store)
    stop = asyncio.Event()
    task = asyncio.create_task(follow(writer, src, stop=stop, poll=5.0))
    try:
        assert await wait_for_results(store, 1) == 1
        folder = tmp_path / SID[3:] / "subagents"
        folder.mkdir(parents=True)
        (folder / agent_src.name).write_bytes(agent_src.read_bytes())
        deadline = time.monotonic() + 60
        row = None
        while time.monotonic() < deadline and row is None:
            await asyncio.sleep(0.05)
            async with await Reader.open(store) as reader:
                row = await reader.session("cc-a1b2c3d")
        assert row is not None and row.parent_session == SID and row.parent_call is None
        append(src, b"".join(LINES[11:]))  # now the parent's Task result names the agent
        assert await wait_for_results(store, 13) == 13
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await writer.close()
    async with await Reader.open(store) as reader:
        row = await reader.session("cc-a1b2c3d")
    assert row is not None and row.parent_call == "t11" and row.results == 1
