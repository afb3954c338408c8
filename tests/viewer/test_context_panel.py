"""The context panel (`c`) and the context as sent (`x`) over a real store filled by the engine
with elision on: sizes per request and arm, break marks, cache hits from usage, the cursor's
request and result, and one request's exact context."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_fixture import ELIDE, long_session
from viewer_helpers import block_by_rid, ready, settle, wait_for

from ctxview.context.state import load_texts, render_context, replay
from ctxview.rules.config import Config
from ctxview.store import Reader
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.context import ContextScreen
from ctxview.viewer.widgets.context_panel import ContextPanel, bucketed, sparkline

SIZE = (140, 50)


async def _fill(tmp: Path, config: dict[str, object] | None) -> tuple[Path, str]:
    async with long_session(tmp, "s-ctx", config) as (store, s):
        for i in range(24):
            await s.context()
            usage = {"input_tokens": 10, "output_tokens": 20, "cache_read_tokens": 900 + 100 * i,
                     "cache_write_tokens": 100}  # fmt: skip
            await s.message("assistant", f"step {i}", usage=usage)
            await s.insert("bash", {"command": f"step {i}"}, f"output {i}\n" * 60)
            if i == 15:
                await s.compact("Halfway there.")
        return store, s.id


@pytest.fixture
async def elided(tmp_path: Path) -> tuple[Path, str]:
    return await _fill(tmp_path, ELIDE)


def test_sparkline_scales_and_buckets() -> None:
    assert sparkline([0, 50, 100], 3, 100) == "▁▅█"
    assert sparkline([1, 2, 3, 4], 2, 4) == "▅█"  # max of each bucket of two
    assert sparkline([-1, 1], 2, 1) == " █"  # no value: a space
    assert bucketed(list(range(10)), 3) == [3, 7, 9]


async def _panel(pilot) -> ContextPanel:  # type: ignore[no-untyped-def]
    await pilot.press("c")
    await wait_for(pilot, lambda: pilot.app.screen.query(ContextPanel))
    panel = pilot.app.screen.query_one(ContextPanel)
    await wait_for(pilot, lambda: panel.loaded)
    await pilot.pause()
    return panel


async def test_c_shows_each_arm_the_breaks_and_cache_hits(elided: tuple[Path, str]) -> None:
    store, sid = elided
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await _panel(pilot)
        text = panel.render().plain
        lines = text.split("\n")
        assert lines[0].startswith("Context per request · 24 requests · as sent: 3.0.0 + elision")
        labels = [line[:10].strip() for line in lines[1:6]]
        assert labels == ["none", "3.0.0", "elided ◂", "breaks", "cache"]
        breaks = lines[4][10:].split("  C compaction")[0]
        assert "C" in breaks and "s" in breaks  # the compaction and the strides
        assert any(ch in lines[5] for ch in "▁▂▃▄▅▆▇█")  # cache hits from the usage records
        # The cursor sits at the tail: the last request, with its usage and sizes.
        assert "request 24:" in text and "usage in 10 read 3,200" in text
        # The elided arm's bar is lower than 3.0.0's where strides took results out.
        fig = panel.figures
        assert fig.requests("elided")[-1].sent_chars < fig.requests("hygiene")[-1].sent_chars
        await pilot.press("c")
        await wait_for(pilot, lambda: not pilot.app.screen.query(ContextPanel))


async def test_an_elided_result_is_marked_with_the_request_it_left(
    elided: tuple[Path, str],
) -> None:
    store, sid = elided
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        panel = await _panel(pilot)
        gone = next(iter(panel.figures.states["elided"].elided_at))
        at = panel.figures.elided_at(gone)
        view.move_to(block_by_rid(view, gone))
        await settle(pilot, view)
        await wait_for(pilot, lambda: "left the context" in panel.render().plain)
        text = panel.render().plain
        assert f"#{gone:04x} left the context at request {at}: from then on it is sent as a stub" \
            in text  # fmt: skip
        kept = max(view.outline.by_rid)  # the last result is inside the window: never elided
        view.move_to(block_by_rid(view, kept))
        await wait_for(pilot, lambda: "stays whole" in panel.render().plain)


async def test_x_shows_the_context_exactly_as_sent_at_the_cursors_request(
    elided: tuple[Path, str],
) -> None:
    store, sid = elided
    async with await Reader.open(store) as reader:
        events = await reader.events(sid)
        row = await reader.session(sid)
        assert row is not None
        config = Config(row.overrides)
        whole = replay(events, config)
        k = 12
        at = replay(events, config, until_request=k)

        async def fetch(rids: list[int]) -> dict[int, str]:
            return await reader.shown(sid, rids)

        await load_texts(at.msgs, fetch)
        expected = render_context(at.msgs)
    assert "elided:" in expected  # request 12 already sends stubs
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        # The cursor on the assistant message that starts request 12.
        start = whole.requests[k - 1].seq
        block = next(b for b in view.blocks if b.seq == start)
        view.move_to(block)
        await settle(pilot, view)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ContextScreen))
        screen = pilot.app.screen
        assert isinstance(screen, ContextScreen)
        await wait_for(pilot, lambda: screen.text != "")
        assert screen.request == k
        assert screen.sent == expected  # what its sizes count; its calls shown readably
        title = str(screen.query_one("#context-title").render())
        assert f"request {k} of 24" in title
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: screen.request == k + 1)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(pilot.app.screen, ContextScreen))


async def test_without_elision_the_panel_says_what_it_would_do(tmp_path: Path) -> None:
    store, sid = await _fill(tmp_path, {"elide.threshold_chars": 2000, "elide.min_chars": 200,
                                        "elide.stride": 4, "elide.keep": 2})  # fmt: skip
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        panel = await _panel(pilot)
        text = panel.render().plain
        assert "as sent: 3.0.0 (elision off)" in text
        assert "3.0.0 ◂" in text
        gone = next(iter(panel.figures.states["elided"].elided_at))
        view.move_to(block_by_rid(view, gone))
        await wait_for(pilot, lambda: "would be sent as a stub" in panel.render().plain)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ContextScreen))
        screen = pilot.app.screen
        assert isinstance(screen, ContextScreen)
        await wait_for(pilot, lambda: screen.text != "")
        assert "elided:" not in screen.text  # as sent: the session ran without elision
