"""A key pressed as a screen opens is the screen's: the hidden prompt's input never takes it.
Textual focuses a new screen's first focusable widget as the screen comes up, before the CSS
that hides the prompt bar applies and before the screen's own view is mounted (after its first
store queries); the prompt's input was that widget, so a `t` pressed then was typed into it
(test_result_screen_facts_search_and_links timed out on a loaded machine, 6 runs of 6)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from store_fixture import Filled, fill
from textual.widgets import Input
from viewer_helpers import ready, view_of, wait_for

from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.messages import OpenResult
from ctxview.viewer.screens.result import ResultScreen
from ctxview.viewer.screens.transcript import TranscriptScreen


@pytest.fixture
async def filled(tmp_path: Path) -> Filled:
    return await fill(tmp_path)


async def test_t_pressed_as_a_result_opens_goes_back_to_the_transcript(filled: Filled) -> None:
    app = CtxviewApp(filled.store, session=filled.session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        app.post_message(OpenResult(filled.session_id, filled.ids["read"]))
        deadline = time.monotonic() + 30
        while not isinstance(app.screen, ResultScreen):  # at once: before it has loaded
            assert time.monotonic() < deadline
            await asyncio.sleep(0)
        screen = app.screen
        assert getattr(screen, "view", None) is None, "loaded already: the key came too late"
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, TranscriptScreen))
        assert view_of(pilot).cursor_block.rid == filled.ids["read"]  # type: ignore[union-attr]


async def test_the_hidden_prompt_never_has_the_focus(filled: Filled) -> None:
    app = CtxviewApp(filled.store, session=filled.session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        app.post_message(OpenResult(filled.session_id, filled.ids["read"]))
        focused: list[object] = []
        deadline = time.monotonic() + 30
        while not (isinstance(app.screen, ResultScreen) and hasattr(app.screen, "view")
                   and app.focused is app.screen.view):  # fmt: skip
            assert time.monotonic() < deadline
            focused.append(app.focused)
            await asyncio.sleep(0)
        assert not any(isinstance(f, Input) for f in focused), focused
        await pilot.press("slash")  # asked for, it has it
        await wait_for(pilot, lambda: isinstance(app.focused, Input))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.focused is app.screen.view)  # type: ignore[attr-defined]
