"""A jump to an id among the rows not loaded yet: the rows around it load first, the cursor lands
there, and the rest of the outline loads around it without moving the cursor. The loader's
window sizes are made small so that a session of a few thousand rows is "long"."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from viewer_helpers import settle, view_of, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.store.records import Body, Event
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.loading import loader
from ctxview.viewer.widgets.transcript_view import TranscriptView

SIZE = (100, 30)
RESULTS = 1500
FIRST = 0x1000


async def _long(tmp: Path) -> Path:
    """One session of RESULTS calls and results, a message every 10, a compaction at 700."""
    store = tmp / "store.db"
    writer = await Writer.open(store)
    await writer.create_session("s-long", title="long", workspace=str(tmp), next_rid=FIRST,
                                started=1_764_000_000.0)  # fmt: skip
    async with writer.batch():
        for n in range(RESULTS):
            rid = FIRST + n
            events: list[Event] = []
            if n % 10 == 0:
                events.append(Event(ts=0.0, kind="message", role="assistant", text=f"step {n}"))
            if n == 700:
                events.append(Event(ts=0.0, kind="compaction", text="Halfway.",
                                    data=json.dumps({"rows": [], "inserted": ""})))  # fmt: skip
            events.append(Event(ts=0.0, kind="call", tool="bash", call_ref=f"c{n}",
                                args=json.dumps({"command": f"echo {n}"})))  # fmt: skip
            events.append(Event(ts=0.0, kind="result", tool="bash", call_ref=f"c{n}", rid=rid,
                                rkind="full", shown_chars=20, shown_lines=2, stored_chars=8,
                                stored_lines=1))  # fmt: skip
            await writer.append("s-long", events, [Body(rid, f"[#{rid:04x}]\nout {n}", f"out {n}")])
    await writer.close()
    return store


@pytest.fixture
async def long_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(loader, "TAIL_ROWS", 100)
    monkeypatch.setattr(loader, "CHUNK_ROWS", 10)
    monkeypatch.setattr(loader, "AHEAD_ROWS", 10)
    monkeypatch.setattr(loader, "WINDOW_BEFORE", 20)
    monkeypatch.setattr(loader, "WINDOW_AFTER", 60)
    return await _long(tmp_path)


def _on_top(view: TranscriptView, rid: int) -> bool:
    block = view.cursor_block
    return (
        block is not None
        and block.rid == rid
        and view.scroll_offset.y == view.heights.offset(block.index)
        and f"#{rid:04x}" in view.screen_text()
    )


async def test_a_far_jump_lands_before_the_outline_is_loaded(long_store: Path) -> None:
    async with CtxviewApp(long_store, session="s-long").run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query(TranscriptView))
        view = view_of(pilot)
        await wait_for(pilot, lambda: view.cursor_block is not None)
        tail = view.cursor_block
        assert tail is not None and tail.rid == FIRST + RESULTS - 1
        target = FIRST + 3
        assert view.outline.block_of(target) is None  # the premise: not loaded yet
        pilot.app.screen.jump_to(target)  # type: ignore[attr-defined]
        await wait_for(
            pilot, lambda: view.cursor_block is not None and view.cursor_block.rid == target
        )
        # Landed on the rows around it: the tail and most of the session are not loaded yet.
        assert not view.fully_loaded
        assert view.outline.block_of(FIRST + RESULTS - 1) is None
        assert len(view.outline.by_rid) < RESULTS
        # The rest loads around it; the cursor and the view stay on the target.
        await wait_for(pilot, lambda: view.fully_loaded, timeout=60)
        await settle(pilot, view)
        assert len(view.outline.by_rid) == RESULTS
        # Loaded: the outline stays out of the full collections while the view lives.
        assert gc.get_freeze_count() > 0
        assert sorted(b.seq for b in view.blocks) == [b.seq for b in view.blocks]
        assert [b.index for b in view.blocks] == list(range(len(view.blocks)))
        assert len(view.outline.boundaries) == 1
        assert _on_top(view, target), view.screen_text()
        assert not view.following
        # Back to where we were (the tail's last result), and forward again.
        await pilot.press("alt+left")
        await wait_for(
            pilot, lambda: view.cursor_block is not None and view.cursor_block.rid == tail.rid
        )
        await pilot.press("alt+right")
        await wait_for(
            pilot, lambda: view.cursor_block is not None and view.cursor_block.rid == target
        )
        # The epochs are right on both sides of the compaction that was loaded later.
        assert view.outline.block_of(FIRST + 699).epoch == 0  # type: ignore[union-attr]
        assert view.outline.block_of(FIRST + 700).epoch == 1  # type: ignore[union-attr]
    assert gc.get_freeze_count() == 0  # the view went: nothing stays frozen


async def test_jump_option_to_the_oldest_id_then_live_rows_and_end(long_store: Path) -> None:
    app = CtxviewApp(long_store, session="s-long", jump=f"#{FIRST:04x}")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query(TranscriptView))
        view = view_of(pilot)
        await wait_for(pilot, lambda: view.cursor_block is not None)
        # The first block the view ever had under its cursor is the oldest result, not the tail.
        assert view.cursor_block.rid == FIRST  # type: ignore[union-attr]
        assert not view.at_tail
        # A result written by the engine while the rows load is not lost and not followed.
        writer = await Writer.open(long_store)
        s = await Session.resume(writer, "s-long")
        await s.insert("bash", {"command": "late"}, "late output")
        late = s.last.rid  # type: ignore[union-attr]
        await writer.close()
        await wait_for(pilot, lambda: view.fully_loaded, timeout=60)
        await wait_for(pilot, lambda: view.outline.block_of(late) is not None)
        await settle(pilot, view)
        assert _on_top(view, FIRST), view.screen_text()
        assert len(view.outline.by_rid) == RESULTS + 1
        await pilot.press("end")
        await wait_for(pilot, lambda: view.following)
        assert view.cursor_block.rid == late  # type: ignore[union-attr]


async def test_a_jump_during_a_far_load_supersedes_it(long_store: Path) -> None:
    async with CtxviewApp(long_store, session="s-long").run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query(TranscriptView))
        view = view_of(pilot)
        await wait_for(pilot, lambda: view.cursor_block is not None)
        assert view.outline.block_of(FIRST + 400) is None  # the premise: not loaded yet
        pilot.app.screen.jump_to(FIRST + 5)  # type: ignore[attr-defined]
        await pilot.pause()
        pilot.app.screen.jump_to(FIRST + 400)  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: view.fully_loaded, timeout=60)
        await settle(pilot, view)
        assert _on_top(view, FIRST + 400), view.screen_text()
        assert len(view.outline.by_rid) == RESULTS
        assert len({b.serial for b in view.blocks}) == len(view.blocks)
        await pilot.press("g", *"beef", "enter")
        status = str(pilot.app.screen.query_one("#status").render())
        assert "There is no result #beef in this session." in status


async def test_home_goes_to_the_first_row_before_the_outline_is_loaded(long_store: Path) -> None:
    async with CtxviewApp(long_store, session="s-long").run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query(TranscriptView))
        view = view_of(pilot)
        await wait_for(pilot, lambda: view.cursor_block is not None)
        assert view.outline.first_seq != 1  # the premise: the first rows are not loaded yet
        await pilot.press("home")
        await wait_for(pilot, lambda: view.cursor_block is not None and view.cursor_block.seq == 1)
        await wait_for(pilot, lambda: view.fully_loaded, timeout=60)
        await settle(pilot, view)
        assert view.cursor_block is view.blocks[0]
        assert view.scroll_offset.y == 0
        assert "step 0" in view.screen_text()
