"""Snapshots of the transcript (each kind of result), a diff, a boundary, an opened elision and
the result view. Nothing on screen depends on the time: fixed session start, no clocks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from store_fixture import Filled, fill
from textual.pilot import Pilot
from viewer_helpers import at_top, block_by_rid, ready, settle, wait_for

from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.result import ResultScreen

SIZE = (110, 48)


@pytest.fixture
def filled(tmp_path: Path) -> Filled:
    return asyncio.run(fill(tmp_path, end=True))


def app_for(f: Filled) -> CtxviewApp:
    return CtxviewApp(f.store, session=f.session_id, theme="ctxview-dark", watch=False)


def test_transcript_top(snap_compare, filled: Filled) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(app_for(filled), terminal_size=SIZE, run_before=at_top)


def test_transcript_diff_and_recall(snap_compare, filled: Filled) -> None:  # type: ignore[no-untyped-def]
    async def diff(pilot: Pilot[None]) -> None:
        view = await ready(pilot)
        view.move_to(block_by_rid(view, filled.ids["edit"]), top=True)
        await settle(pilot, view)

    assert snap_compare(app_for(filled), terminal_size=SIZE, run_before=diff)


def test_transcript_boundary(snap_compare, filled: Filled) -> None:  # type: ignore[no-untyped-def]
    async def boundary(pilot: Pilot[None]) -> None:
        view = await ready(pilot)
        await pilot.press("home", "right_square_bracket")
        await settle(pilot, view)

    assert snap_compare(app_for(filled), terminal_size=SIZE, run_before=boundary)


def test_transcript_elision_open(snap_compare, filled: Filled) -> None:  # type: ignore[no-untyped-def]
    async def elision(pilot: Pilot[None]) -> None:
        view = await ready(pilot)
        block = block_by_rid(view, filled.ids["capped"])
        view.move_to(block)
        await pilot.press("enter", "e")
        await wait_for(pilot, lambda: "test_700" in view.block_text(block))
        lines = view.block_text(block).split("\n")
        at = next(i for i, line in enumerate(lines) if "elided" in line)
        view.scroll_to(y=view.heights.offset(block.index) + at - 3, animate=False,
                       immediate=True, force=True)  # fmt: skip
        await settle(pilot, view)

    assert snap_compare(app_for(filled), terminal_size=SIZE, run_before=elision)


def test_result_view(snap_compare, filled: Filled) -> None:  # type: ignore[no-untyped-def]
    async def result(pilot: Pilot[None]) -> None:
        view = await ready(pilot)
        view.move_to(block_by_rid(view, filled.ids["read"]))
        await pilot.press("enter", "enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "view", None) is not None)
        await pilot.press("slash", *"f4", "enter")
        await pilot.pause()

    assert snap_compare(app_for(filled), terminal_size=SIZE, run_before=result)
