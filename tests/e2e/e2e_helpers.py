"""What the end-to-end tests share: a store with a small session, the ctxview command, ports."""

from __future__ import annotations

import asyncio
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from ctxview.backend.session import Session
from ctxview.backend.store import Writer

CTXVIEW = str(Path(sys.executable).with_name("ctxview"))
GREETING = "Please look at the greeting module"


@dataclass
class SmallStore:
    path: Path
    workspace: Path
    session_id: str
    rids: list[int]


async def _build(path: Path, workspace: Path) -> tuple[str, list[int]]:
    workspace.mkdir()
    (workspace / "greet.py").write_text('def greet(name):\n    return f"Hello {name}"\n')
    writer = await Writer.open(path)
    s = await Session.start(writer, workspace, title="e2e session")
    await s.message("user", GREETING)
    rids = []
    for tool, args in (("read", {"path": "greet.py"}), ("grep", {"pattern": "Hello"})):
        await s.run(tool, args)
        assert s.last is not None
        rids.append(s.last.rid)
    await s.message("assistant", "The greeting is built with an f-string.")
    await writer.close()
    return s.id, rids


@pytest.fixture
def small_store(tmp_path: Path) -> SmallStore:
    path = tmp_path / "store" / "store.db"
    path.parent.mkdir()
    session_id, rids = asyncio.run(_build(path, tmp_path / "ws"))
    return SmallStore(path, tmp_path / "ws", session_id, rids)


def insert_from_another_process(store: SmallStore, marker: str) -> float:
    """A result committed by the engine in a separate Python process; the wall-clock time of
    the commit, as that process saw it."""
    code = f"""
import asyncio
import time
from ctxview.backend.session import Session
from ctxview.backend.store import Writer

async def main():
    writer = await Writer.open({str(store.path)!r})
    s = await Session.resume(writer, {store.session_id!r})
    await s.insert("bash", {{"command": "echo"}}, {marker!r})
    print(time.time(), flush=True)
    await writer.close()

asyncio.run(main())
"""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True
    )
    return float(done.stdout.split()[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
