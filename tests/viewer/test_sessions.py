"""The sessions screen in the real app over a real store: rows, sub-agents under their parent,
live arrival of a new session, Enter opens one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import DataTable

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.sessions import SessionsScreen, human_count, short_path


@pytest.fixture
async def writer(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("".join(f"line {n}\n" for n in range(50)))
    w = await Writer.open(tmp_path / "store.db")
    yield w
    await w.close()


async def wait_for(check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Poll until `check()` holds (the watcher works in real time; the bound is for a loaded
    machine, where the app alone takes seconds to start)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.05)


async def test_rows_and_sub_agents_under_their_parent(tmp_path: Path, writer: Writer) -> None:
    ws = tmp_path / "ws"
    old = await Session.start(writer, ws, title="old session", started=1_000.0)
    await old.run("read", {"path": "a.py"})
    await old.run("read", {"path": "a.py"})  # an unchanged stub: chars saved
    await old.end()
    parent = await Session.start(writer, ws, title="parent [b]not markup[/b]", started=2_000.0)
    child = await Session.start(writer, ws, title="child", started=2_001.0,
                                parent_session=parent.id)  # fmt: skip
    app = CtxviewApp(tmp_path / "store.db")
    async with app.run_test(size=(140, 20)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await wait_for(lambda: len(screen.session_ids) == 3)
        # Newest first, the sub-agent right under its parent.
        assert screen.session_ids == [parent.id, child.id, old.id]
        table = screen.query_one(DataTable)
        row = [str(c) for c in table.get_row(parent.id)]
        assert row[0] == "parent [b]not markup[/b]"  # untrusted text shown as it is
        assert row[3] == "live"
        assert str(table.get_row(child.id)[0]).startswith("└ ")
        old_row = [str(c) for c in table.get_row(old.id)]
        assert old_row[2] == "2" and old_row[3] == "ended" and old_row[4] != "0"
        await pilot.pause()


async def test_a_new_session_appears_live_and_enter_opens_it(
    tmp_path: Path, writer: Writer
) -> None:
    first = await Session.start(writer, tmp_path / "ws", title="first")
    app = CtxviewApp(tmp_path / "store.db")
    async with app.run_test(size=(120, 20)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await wait_for(lambda: screen.session_ids == [first.id])
        second = await Session.start(writer, tmp_path / "ws", title="second")
        await wait_for(lambda: screen.session_ids[0] == second.id)
        # The cursor stayed on the row it was on; results arrive in its cells live.
        table = screen.query_one(DataTable)
        await first.run("read", {"path": "a.py"})
        await wait_for(lambda: str(table.get_row(first.id)[2]) == "1")
        assert table.cursor_coordinate.row == 1
        await pilot.press("up", "enter")
        await wait_for(lambda: getattr(app.screen, "session_id", None) == second.id)


async def test_empty_store_says_so(tmp_path: Path, writer: Writer) -> None:
    await writer.flush()
    app = CtxviewApp(tmp_path / "store.db", watch=False)
    async with app.run_test(size=(80, 12)):
        await wait_for(lambda: app.screen.has_class("-empty"))


def test_small_formatters() -> None:
    assert human_count(999) == "999"
    assert human_count(12_345) == "12.3k"
    assert human_count(2_500_000) == "2.5M"
    assert short_path(str(Path.home() / "p")) == "~/p"
    long = "/x" * 40
    assert short_path(long, 20).startswith("…") and len(short_path(long, 20)) == 20


async def test_a_busy_store_still_updates_the_list(tmp_path: Path, writer: Writer) -> None:
    """Rows committed every 50 ms must not starve the list's reloads."""
    busy = await Session.start(writer, tmp_path / "ws", title="busy")
    app = CtxviewApp(tmp_path / "store.db")
    async with app.run_test(size=(120, 20)):
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await wait_for(lambda: screen.session_ids == [busy.id])
        stop = asyncio.Event()

        async def churn() -> None:
            while not stop.is_set():
                await busy.insert("bash", {"command": "date"}, "tick")
                await asyncio.sleep(0.05)

        task = asyncio.create_task(churn())
        try:
            await asyncio.sleep(0.5)
            late = await Session.start(writer, tmp_path / "ws", title="late")
            # Starved, the list never updates: 20 s is a loaded machine's bound, not a speed.
            await wait_for(lambda: late.id in screen.session_ids, timeout=20)
            table = screen.query_one(DataTable)
            await wait_for(lambda: int(str(table.get_row(busy.id)[2])) > 5, timeout=20)
        finally:
            stop.set()
            await task


def test_a_long_title_is_cut_so_the_row_stays_in_view() -> None:
    from ctxview.store.records import SessionRow
    from ctxview.viewer.screens.sessions import TITLE_WIDTH, row_view

    s = SessionRow("s1", "word " * 40 + "\nsecond line", "/w", "live", None, None, None, None,
                   0.0, None, "{}", 4096, "{}")  # fmt: skip
    title = row_view(s, 0).cells[0]
    assert len(title) == TITLE_WIDTH and title.endswith("…") and "\n" not in title
