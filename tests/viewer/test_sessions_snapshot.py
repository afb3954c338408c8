"""A snapshot of the session list: fixed ids, times (UTC), workspaces and figures."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.sessions import SessionsScreen

T0 = 1_767_000_000.0  # 2025-12-29 09:20 UTC


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def build(path: Path) -> None:
    writer = await Writer.open(path)
    ws = "/srv/projects/tinyshop"  # never touched: results are inserted, not run
    old = await Session.start(writer, "/srv/projects/parser", title="Port the parser to 3.12",
                              session_id="20251228-101500-aa11bb", started=T0 - 86_400,
                              source="claude_code")  # fmt: skip
    lines = [f"{n}: line {n}" for n in range(1, 301)]
    for _ in range(2):  # the second read is an unchanged stub: characters saved
        await old.insert_read({"path": "p.py"}, "p.py", "p.py", 1, lines[:300], 300, "ab" * 32,
                              ts=T0 - 86_000)  # fmt: skip
    await old.end(ts=T0 - 80_000)
    main = await Session.start(writer, ws, title="Fix: cart total wrong with a discount code",
                               session_id="20251229-092000-cc22dd", started=T0, source="demo")  # fmt: skip
    await main.insert("bash", {"command": "make test"}, "ok\n" * 1500, ts=T0 + 5)
    await Session.start(writer, ws, title="sub-agent: where is FIVEOFF handled?",
                        session_id="20251229-092100-ee33ff", started=T0 + 60, source="demo",
                        parent_session=main.id)  # fmt: skip
    await writer.close()


def test_session_list_snapshot(snap_compare, tmp_path: Path, utc: None) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store.db"
    asyncio.run(build(store))

    async def loaded(pilot: Pilot[None]) -> None:
        screen = pilot.app.screen
        assert isinstance(screen, SessionsScreen)
        table = screen.query_one(DataTable)

        def laid_out() -> bool:
            # The rows are in, and the table has sized its columns to them (on a busy machine a
            # frame can show the rows in header-wide columns first).
            columns = list(table.columns.values())  # rebuilt to fit the width: can be none
            return (len(screen.session_ids) == 3 and bool(columns)
                    and columns[0].get_render_width(table) > 20)  # fmt: skip

        for _ in range(200):
            if laid_out():
                break
            await pilot.pause(0.05)
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(CtxviewApp(store, watch=False), terminal_size=(130, 12), run_before=loaded)


async def _loaded(pilot: Pilot[None]) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, SessionsScreen)
    table = screen.query_one(DataTable)
    for _ in range(200):
        if len(screen.session_ids) == 3 and table.columns:
            break
        await pilot.pause(0.05)
    await pilot.pause()
    await pilot.pause()


def test_session_list_snapshot_80x24(snap_compare, tmp_path: Path, utc: None) -> None:  # type: ignore[no-untyped-def]
    """Issue 10.3: at 80 columns the columns that fit, the title shrunk, the footer's q and ?."""
    store = tmp_path / "store.db"
    asyncio.run(build(store))
    assert snap_compare(CtxviewApp(store, watch=False), terminal_size=(80, 24), run_before=_loaded)
