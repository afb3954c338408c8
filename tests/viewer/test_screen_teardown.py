"""A screen's work stops before its children go, however the screen goes: switched away,
removed, or the app exiting (popped: test_store_follow.py). Textual prunes a screen's children
before its Unmount cancels its workers; a worker that touched a child in between raised
NoMatches for '#status' and stopped the app (tests/viewer/test_store_follow.py, once in a CI)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from test_store_follow import make_store, shows, until
from textual import on
from textual.messages import Prune
from textual.pilot import Pilot

from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.transcript import TranscriptScreen


def busy(screen: TranscriptScreen, ran: list[int]) -> Callable[[], object]:
    """Work that keeps touching the screen's children, as the status line's update does."""

    async def work() -> None:
        while True:
            ran.append(1)
            screen.update_status(str(len(ran)))
            await asyncio.sleep(0)

    return work


async def opened(tmp_path: Path, pilot: Pilot, app: CtxviewApp) -> TranscriptScreen:
    await until(pilot, lambda: shows(app, "a title"))
    screen = app.screen
    assert isinstance(screen, TranscriptScreen)
    return screen


def app_on(store: Path) -> CtxviewApp:
    return CtxviewApp(store, session="s", watch=False)


async def test_a_screen_switched_away_stops_its_work_first(tmp_path: Path) -> None:
    await make_store(tmp_path / "store.db", "s", "a title", ["some text"])
    app = app_on(tmp_path / "store.db")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await opened(tmp_path, pilot, app)
        ran: list[int] = []
        screen.run_worker(busy(screen, ran), group="busy")
        await until(pilot, lambda: len(ran) > 10)
        await app.switch_screen(TranscriptScreen("s"))
        assert not screen.is_attached
        await pilot.pause()
        assert app.is_running and app.return_code is None


async def test_the_app_exiting_stops_its_screens_work_first(tmp_path: Path) -> None:
    await make_store(tmp_path / "store.db", "s", "a title", ["some text"])
    app = app_on(tmp_path / "store.db")
    ran: list[int] = []
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await opened(tmp_path, pilot, app)
        screen.run_worker(busy(screen, ran), group="busy")
        await until(pilot, lambda: len(ran) > 10)
    # Leaving the block exits the app; a worker's error there is raised by run_test.
    assert app.return_code in (None, 0)


class StartsWorkBehindItsPrune(TranscriptScreen):
    """Posts, as its teardown starts, a call that starts busy work: a message queued behind the
    Prune (a StoreChanged from the watcher, which starts a fetch), handled before the children
    go."""

    ran: list[int]

    @on(Prune)
    def _queue_work(self) -> None:
        self.call_later(lambda: self.run_worker(busy(self, self.ran), group="busy"))


async def test_work_started_while_the_screen_goes_never_runs(tmp_path: Path) -> None:
    await make_store(tmp_path / "store.db", "s", "a title", ["some text"])
    app = app_on(tmp_path / "store.db")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = StartsWorkBehindItsPrune("s")
        screen.ran = []
        await app.push_screen(screen)
        await opened(tmp_path, pilot, app)
        await app.pop_screen()
        assert not screen.is_attached
        await pilot.pause()
        assert app.is_running and app.return_code is None
        assert not screen.ran
