"""The session list under an open transcript: live commits do not reload it (it cannot be seen;
a reload there cost a query and a repaint per commit while a person read the live session);
going back to it shows what changed meanwhile, in one reload."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import DataTable
from viewer_helpers import ready, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.sessions import SessionsScreen

COMMITS = 6


async def test_hidden_list_does_not_reload_and_catches_up_when_shown(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    writer = await Writer.open(tmp_path / "store.db")
    try:
        first = await Session.start(writer, tmp_path / "ws", title="first")
        await first.insert("bash", {"command": "date"}, "tick 0")
        app = CtxviewApp(tmp_path / "store.db")
        async with app.run_test(size=(120, 24)) as pilot:
            screen = app.screen
            assert isinstance(screen, SessionsScreen)
            await wait_for(pilot, lambda: screen.session_ids == [first.id])
            await pilot.press("enter")
            await ready(pilot)
            assert app.screen is not screen
            # A reload asked before the transcript opened has run (waited for: after a fixed
            # half second, a slow one would be counted below).
            await wait_for(pilot, lambda: not screen._reloading)

            # Count the list's queries and the watcher's notifications from here on (the real
            # reader and watcher, their calls counted on the way through).
            reader, watcher = app.reader, app.watcher
            assert watcher is not None
            queries, notified = [0], [0]
            sessions, notify = reader.sessions, watcher.notify

            async def counted_sessions():  # type: ignore[no-untyped-def]
                queries[0] += 1
                return await sessions()

            def counted_notify() -> None:
                notified[0] += 1
                notify()

            reader.sessions = counted_sessions  # type: ignore[method-assign]
            watcher.notify = counted_notify

            late = None
            for n in range(1, COMMITS + 1):
                seen = notified[0]
                if n == COMMITS:
                    late = await Session.start(writer, tmp_path / "ws", title="late")
                else:
                    await first.insert("bash", {"command": "date"}, f"tick {n}")
                await wait_for(pilot, lambda seen=seen: notified[0] > seen)  # type: ignore[misc]
            await pilot.pause(0.6)  # past the list's reload spacing (0.25 s)
            assert notified[0] >= COMMITS
            assert queries[0] == 0, f"{queries[0]} list reloads for {notified[0]} commits"

            await pilot.press("escape")
            assert late is not None
            await wait_for(pilot, lambda: app.screen is screen)
            await wait_for(pilot, lambda: screen.session_ids == [late.id, first.id])
            table = screen.query_one(DataTable)
            await wait_for(pilot, lambda: str(table.get_row(first.id)[2]) == str(COMMITS))
            assert "2 sessions" in str(screen.sub_title)
            assert queries[0] == 1  # one catch-up, not one per commit missed
            await asyncio.sleep(0)
    finally:
        await writer.close()
