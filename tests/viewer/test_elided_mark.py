"""Issue 5: a result an elision stride took out of the context carries, in its transcript header,
the request it left at; a click on the mark goes to the stride's row; strides written live mark
their results as they arrive. Over a real store filled by the engine with elision on."""

from __future__ import annotations

from pathlib import Path

from store_fixture import ELIDE, long_session
from viewer_helpers import block_by_rid, ready, settle, wait_for

from ctxview.engine.session import Session
from ctxview.store import Reader, Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.widgets.transcript_view import TranscriptView

SIZE = (120, 40)


async def _steps(s: Session, first: int, last: int) -> None:
    for i in range(first, last):
        await s.context()  # may move the window a stride: an `elide` event
        await s.message("assistant", f"step {i}")
        await s.insert("bash", {"command": f"step {i}"}, f"output {i}\n" * 60)


async def _fill(tmp: Path) -> tuple[Path, str]:
    async with long_session(tmp, "s-el", ELIDE) as (store, s):
        await _steps(s, 0, 16)
        return store, s.id


async def _strides(store: Path, sid: str) -> dict[int, tuple[int, int]]:
    """rid -> (request, seq) from the store's `elide` events."""
    async with await Reader.open(store) as reader:
        out: dict[int, tuple[int, int]] = {}
        for ev in await reader.events_of_kind(sid, "elide"):
            for rid in ev.extra["rids"]:
                out.setdefault(rid, (ev.extra["request"], ev.seq))  # type: ignore[arg-type]
        return out


async def _header(pilot, view: TranscriptView, rid: int) -> str:  # type: ignore[no-untyped-def]
    """The result's bracket line as rendered (its text loaded from the store first)."""
    block = block_by_rid(view, rid)
    await wait_for(pilot, lambda: view.block_text(block))
    return view.block_text(block).split("\n")[1]


async def test_elided_results_say_the_request_they_left_and_link_to_the_stride(
    tmp_path: Path,
) -> None:
    store, sid = await _fill(tmp_path)
    strides = await _strides(store, sid)
    assert len({seq for _, seq in strides.values()}) >= 2  # the premise: several strides
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        for rid, (request, _) in strides.items():
            assert f"]  elided since request {request}" in await _header(pilot, view, rid)
        kept = max(view.outline.by_rid)  # inside the live window: never elided
        assert kept not in strides
        assert "elided since" not in await _header(pilot, view, kept)
        # The context panel names the same request for the same result.
        await pilot.press("c")
        from ctxview.viewer.widgets.context_panel import ContextPanel

        await wait_for(pilot, lambda: pilot.app.screen.query(ContextPanel))
        panel = pilot.app.screen.query_one(ContextPanel)
        await wait_for(pilot, lambda: panel.loaded)
        for rid, (request, _) in strides.items():
            assert panel.figures.elided_at(rid) == request
        await pilot.press("c")
        # A click on the mark lands on the stride's row; alt+left comes back.
        rid = max(strides)
        request, seq = strides[rid]
        block = block_by_rid(view, rid)
        view.move_to(block, top=True)
        await settle(pilot, view)
        lines = view.screen_text().split("\n")
        y = next(i for i, line in enumerate(lines) if f"]  elided since request {request}" in line)
        x = lines[y].index("elided since") + 2
        await pilot.click("#transcript", offset=(x, y))
        await wait_for(
            pilot, lambda: view.cursor_block is not None and view.cursor_block.seq == seq
        )
        assert "older results now go to the model as stubs" in view.block_text(view.cursor_block)
        await pilot.press("alt+left")
        assert view.cursor_block is block


async def test_a_stride_written_live_marks_its_results(tmp_path: Path) -> None:
    store, sid = await _fill(tmp_path)
    before = await _strides(store, sid)
    async with CtxviewApp(store, session=sid).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        async with await Writer.open(store) as writer:
            s = await Session.resume(writer, sid)
            await _steps(s, 16, 24)
        after = await _strides(store, sid)
        new = sorted(set(after) - set(before))
        assert new  # the premise: the engine took more results out
        await wait_for(pilot, lambda: all(r in view.outline.by_rid for r in new))
        for rid in new:
            request = after[rid][0]
            await wait_for(pilot, lambda r=rid: view.elided.get(r) == after[r])
            assert f"]  elided since request {request}" in await _header(pilot, view, rid)
