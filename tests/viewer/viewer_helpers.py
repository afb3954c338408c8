"""Helpers for the viewer's Pilot tests: wait for a condition instead of sleeping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ctxview.viewer.render.outline import Block
from ctxview.viewer.widgets.transcript_view import TranscriptView
from textual.pilot import Pilot


async def wait_for(pilot: Pilot, check: Callable[[], object], timeout: float = 5.0) -> None:
    """Poll `check` between frames until it is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {check}")
        await pilot.pause(0.02)


def view_of(pilot: Pilot) -> TranscriptView:
    return pilot.app.screen.query_one(TranscriptView)


async def ready(pilot: Pilot) -> TranscriptView:
    """The transcript is loaded and its visible text rendered."""
    await wait_for(pilot, lambda: pilot.app.screen.query(TranscriptView))
    view = view_of(pilot)
    await wait_for(pilot, lambda: view.fully_loaded)
    await wait_for(pilot, lambda: "…" not in view.screen_text().split("\n", 1)[0])
    await settle(pilot, view)
    return view


async def settle(pilot: Pilot, view: TranscriptView) -> None:
    """Let the bodies on screen load and the heights settle."""
    for _ in range(6):
        await pilot.pause()
        view.screen_text()
        await asyncio.sleep(0)
    await wait_for(pilot, lambda: not view._loading and not view._heights_scheduled)
    await pilot.pause()


def block_by_rid(view: TranscriptView, rid: int) -> Block:
    block = view.outline.block_of(rid)
    assert block is not None, rid
    return block
