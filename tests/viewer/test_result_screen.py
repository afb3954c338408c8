"""The result screen: a 100,000-line result rendered a window at a time, syntax colour per
window, search inside, ids in the stored text as links, a missing id."""

from __future__ import annotations

import time
from pathlib import Path

from store_fixture import fill
from viewer_helpers import ready, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.messages import OpenResult
from ctxview.viewer.screens.result import ResultScreen

SIZE = (100, 40)


async def open_result(pilot, session: str, rid: int) -> ResultScreen:  # type: ignore[no-untyped-def]
    pilot.app.post_message(OpenResult(session, rid))
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
    screen = pilot.app.screen
    await wait_for(pilot, lambda: getattr(screen, "view", None) is not None)
    return screen  # type: ignore[return-value]


async def test_a_100k_line_result_scrolls_a_window_at_a_time(tmp_path: Path) -> None:
    f = await fill(tmp_path)
    writer = await Writer.open(f.store)
    s = await Session.resume(writer, f.session_id)
    lines = [f"def f{i}(x):  # line {i}" for i in range(100_000)]
    await s.insert_read({"path": "big.py"}, "big.py", "big.py", 1, lines, 100_000, "ab" * 32)
    rid = s.last.rid  # type: ignore[union-attr]
    await writer.close()
    async with CtxviewApp(f.store, session=f.session_id).run_test(size=SIZE) as pilot:
        await ready(pilot)
        t0 = time.perf_counter()
        screen = await open_result(pilot, f.session_id, rid)
        view = screen.view
        assert len(view.lines) == 100_000
        await pilot.press("end")
        await pilot.pause()
        text = "\n".join(view.render_line(y).text for y in range(view.size.height))
        assert "100000 def f99999(x):  # line 99999" in text
        # Only the windows drawn were lexed: the top and the end, never all 500 windows.
        assert len(view._chunks) <= 4
        for _ in range(20):
            await pilot.press("pageup")
        await pilot.pause()
        assert len(view._chunks) <= 8
        assert time.perf_counter() - t0 < 20  # generous: a shared, busy machine
        await pilot.press("slash", *"line 5000", "enter")
        status = str(screen.query_one("#result-status").render())
        assert "match 1/" in status
        assert "5000 def f4999" in "\n".join(
            view.render_line(y).text for y in range(view.size.height)
        )


async def test_ids_in_stored_text_are_links(tmp_path: Path) -> None:
    f = await fill(tmp_path)
    writer = await Writer.open(f.store)
    s = await Session.resume(writer, f.session_id)
    await s.insert("bash", {"command": "grep"}, "nothing\nsee #1000 and #ffff here")
    rid = s.last.rid  # type: ignore[union-attr]
    await writer.close()
    async with CtxviewApp(f.store, session=f.session_id).run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = await open_result(pilot, f.session_id, rid)
        await pilot.pause()
        row = screen.view.render_line(1)
        metas = [seg.style.meta for seg in row if seg.style and seg.style.meta.get("@click")]
        assert metas == [{"@click": "screen.open_rid(4096)"}]  # #ffff is no result here
        y = screen.view.region.y - screen.region.y + 1
        x = screen.view.region.x + row.text.index("#1000") + 1
        await pilot.click(offset=(x, y))
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "rid", None) == 0x1000)


async def test_a_missing_result_says_so(tmp_path: Path) -> None:
    f = await fill(tmp_path)
    async with CtxviewApp(f.store, session=f.session_id).run_test(size=SIZE) as pilot:
        await ready(pilot)
        pilot.app.post_message(OpenResult(f.session_id, 0xBEEF))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
        header = pilot.app.screen.query_one("#result-header")
        await wait_for(pilot, lambda: "There is no result #beef" in str(header.render()))


async def test_an_edit_opens_as_a_coloured_diff(tmp_path: Path) -> None:
    f = await fill(tmp_path)
    async with CtxviewApp(f.store, session=f.session_id).run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = await open_result(pilot, f.session_id, f.ids["edit"])
        await pilot.pause()
        view = screen.view
        pal = view.palette
        rows = [view.render_line(y) for y in range(view.size.height)]
        minus = next(r for r in rows if "-    return x + 3" in r.text)
        plus = next(r for r in rows if "+    return x + 3  # fixed" in r.text)
        assert any(seg.style and seg.style.bgcolor == pal.remove_bg.bgcolor for seg in minus)
        assert any(seg.style and seg.style.bgcolor == pal.add_bg.bgcolor for seg in plus)
        header = str(screen.query_one("#result-header").render())
        assert "+1 −1" in header
