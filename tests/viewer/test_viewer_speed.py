"""The mechanisms behind the viewer's far-jump and live figures (bench/bench_viewer.py):

- a far jump's first screen is fetched with its window, by its blocks (the target's call is the
  row before the target): nothing on it waits for a second round of queries;
- while a jump looks its target up, the outline loader sends no further step (the one read
  connection would make the lookup wait behind it);
- a live row repaints the transcript's lines, never the whole screen (Textual's default screen,
  under the transcript, was woken by every commit and repainted all of it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import test_far_jump
from test_far_jump import FIRST, RESULTS
from textual._compositor import Compositor
from viewer_helpers import settle, view_of, wait_for

from ctxview.engine.session import Session
from ctxview.store import Reader, Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.loading.bodies import Bodies
from ctxview.viewer.widgets.transcript_view import TranscriptView

SIZE = (100, 30)
long_store = test_far_jump.long_store  # the fixture: a long session, small loading steps


async def _opened(pilot: Any) -> TranscriptView:
    await wait_for(pilot, lambda: pilot.app.screen.query(TranscriptView))
    view = view_of(pilot)
    await wait_for(pilot, lambda: view.cursor_block is not None)
    return view


async def test_a_far_jump_lands_with_its_screen_fetched(
    long_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted: list[int] = []  # seqs a drawn block found missing (each costs another query round)
    schedule = Bodies.schedule

    def record(self: Bodies) -> None:
        wanted.extend(self.want_seqs)
        schedule(self)

    monkeypatch.setattr(Bodies, "schedule", record)
    async with CtxviewApp(long_store, session="s-long").run_test(size=SIZE) as pilot:
        view = await _opened(pilot)
        for target in (FIRST + 3, FIRST + 400, FIRST + 55):
            if view.outline.block_of(target) is not None:
                continue  # loaded meanwhile: not a far jump
            wanted.clear()
            pilot.app.screen.jump_to(target)  # type: ignore[attr-defined]
            await wait_for(pilot, lambda t=target: view.cursor_block is not None
                           and view.cursor_block.rid == t)  # fmt: skip
            await settle(pilot, view)
            block = view.cursor_block
            assert block is not None and f"#{target:04x}" in view.screen_text()
            on_screen = {seq for b in view.visible_blocks() for seq in b.seqs}
            assert not on_screen & set(wanted), (target, block.seqs, sorted(wanted))


async def test_the_loader_waits_while_a_jump_looks_its_target_up(
    long_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[str] = []
    result, outline = Reader.result, Reader.outline

    async def slow_result(self: Reader, session_id: str, rid: int) -> Any:
        log.append("lookup")
        await asyncio.sleep(0.3)  # a lookup on a busy machine: the loader must not step meanwhile
        try:
            return await result(self, session_id, rid)
        finally:
            log.append("found")

    async def logged_outline(self: Reader, session_id: str, **kw: Any) -> Any:
        log.append(f"outline limit={kw.get('limit')}")
        return await outline(self, session_id, **kw)

    monkeypatch.setattr(Reader, "result", slow_result)
    monkeypatch.setattr(Reader, "outline", logged_outline)
    # No store watcher: the loader's own second read connection touches the -wal as it opens,
    # the watcher took that for a commit, and its fetch of new rows (an outline past the last
    # row) landed in the lookup when a loaded machine delayed it (5 runs in 6 beside 3 busy loops).
    app = CtxviewApp(long_store, session="s-long", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await _opened(pilot)
        await wait_for(pilot, lambda: "outline limit=10" in log)  # the loader is stepping back
        target = FIRST + 3
        assert view.outline.block_of(target) is None
        log.clear()
        pilot.app.screen.jump_to(target)  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: view.cursor_block is not None
                       and view.cursor_block.rid == target)  # fmt: skip
        during = log[log.index("lookup") : log.index("found")]
        assert during == ["lookup"], during
        # The window's two queries come next, not a step of the superseded loader.
        after = log[log.index("found") + 1 :][:2]
        assert after == ["outline limit=20", "outline limit=60"], log
        await wait_for(pilot, lambda: view.fully_loaded, timeout=60)
        assert len(view.outline.by_rid) == RESULTS


async def test_a_live_row_repaints_the_lines_not_the_whole_screen(
    long_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = [0]
    render_full = Compositor.render_full_update

    def counted(self: Compositor, simplify: bool = False) -> Any:
        full[0] += 1
        return render_full(self, simplify)

    async with CtxviewApp(long_store, session="s-long").run_test(size=SIZE) as pilot:
        view = await _opened(pilot)
        await wait_for(pilot, lambda: view.fully_loaded, timeout=60)
        await settle(pilot, view)
        monkeypatch.setattr(Compositor, "render_full_update", counted)
        writer = await Writer.open(long_store)
        try:
            s = await Session.resume(writer, "s-long")
            for n in range(5):
                await s.insert("bash", {"command": f"echo {n}"}, f"live {n}")
                rid = s.last.rid  # type: ignore[union-attr]
                await wait_for(pilot, lambda r=rid: view.outline.block_of(r) is not None)
                await settle(pilot, view)
                assert f"live {n}" in view.screen_text()
        finally:
            await writer.close()
        assert view.following
        assert full[0] <= 1, f"{full[0]} full-screen repaints for 5 live rows"
