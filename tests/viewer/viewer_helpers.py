"""Helpers for the viewer's Pilot tests: wait for a condition instead of sleeping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input, OptionList

from ctxview.viewer.layout.outline import Block
from ctxview.viewer.screens.context import ContextScreen
from ctxview.viewer.widgets.transcript_view import TranscriptView


async def wait_for(pilot: Pilot, check: Callable[[], object], timeout: float = 30.0) -> None:
    """Poll `check` between frames until it is true; fail after `timeout` seconds (a bound for
    a loaded machine, where loading a transcript can take several times as long)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {check}")
        await pilot.pause(0.02)


def palette_shown(pilot: Pilot) -> list[str]:
    """The hits the open command palette lists."""
    options = pilot.app.screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def palette_search(
    pilot: Pilot, query: str, want: Callable[[list[str]], object], timeout: float = 30.0
) -> list[str]:
    """Type `query` into the open command palette; its hits once its search has finished (no
    worker of the palette running) and they are what `want` says; fail after `timeout` seconds.
    A fixed pause read the list before a loaded machine's search had found anything."""
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, CommandPalette), timeout)
    palette = pilot.app.screen
    await pilot.press(*query)

    def done() -> bool:
        searching = any(w.node is palette and not w.is_finished for w in pilot.app.workers)
        return (pilot.app.screen is palette and palette.query_one(Input).value == query
                and not searching and bool(want(palette_shown(pilot))))  # fmt: skip

    try:
        await wait_for(pilot, done, timeout)
    except AssertionError:
        raise AssertionError(f"the palette's hits for {query!r}: {palette_shown(pilot)}") from None
    await pilot.pause()
    return palette_shown(pilot)


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


async def open_request(pilot: Pilot) -> ContextScreen:
    """`x`: the context screen, once it shows a request's text."""
    await pilot.press("x")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ContextScreen))
    screen = pilot.app.screen
    assert isinstance(screen, ContextScreen)
    await wait_for(pilot, lambda: screen.text != "")
    return screen


async def at_top(pilot: Pilot) -> TranscriptView:
    """The transcript loaded and at its first line (home), the bodies on screen settled; also a
    snapshot's `run_before`."""
    view = await ready(pilot)
    await pilot.press("home")
    await settle(pilot, view)
    return view


async def settle(pilot: Pilot, view: TranscriptView) -> None:
    """Let the bodies on screen load and the heights settle."""
    for _ in range(6):
        await pilot.pause()
        view.screen_text()
        await asyncio.sleep(0)
    await wait_for(pilot, lambda: not view.bodies.loading and not view._heights_scheduled)
    await pilot.pause()


def block_by_rid(view: TranscriptView, rid: int) -> Block:
    block = view.outline.block_of(rid)
    assert block is not None, rid
    return block
