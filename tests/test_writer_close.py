"""A writer closes promptly whatever its lease renewal is doing (a session added just before the
close woke the renewing task; cancelling it then was swallowed on 3.11, and close never returned)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ctxview.backend.session import Session
from ctxview.backend.store import Reader, Writer


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
