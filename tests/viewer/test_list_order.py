"""Issue 10.8: the session list sorts by newest, size and savings, and filters as you type by a
word of the title. Three sessions whose three orders all differ (real sessions written by the
engine: a capped output is what saves characters), driven with the keys in the real app."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable
from viewer_helpers import wait_for

from ctxview.engine.session import Session
from ctxview.store import Reader, Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.sessions import SessionsScreen

# A long title: its distinctive word comes after the part the Title column shows.
LONG = "update the docs " * 8 + "quokka"


@dataclass
class Three:
    newest: str  # started last, one small result, nothing saved
    biggest: str  # three long one-line outputs (not capped): the most stored, nothing saved
    saver: str  # started first, one 5,000-line output the engine caps: the most saved


async def _three(store: Path) -> Three:
    w = await Writer.open(store)
    ws = "/srv/projects/shop"  # one workspace for all: the filter can only match the title
    saver = await Session.start(w, ws, title="Add the zebra migration",
                                started=1_764_000_000.0)  # fmt: skip
    await saver.insert("bash", {"command": "seq 0 4999"}, "\n".join(map(str, range(5000))))
    biggest = await Session.start(w, ws, title="Refactor the Billing module",
                                  started=1_764_000_100.0)  # fmt: skip
    for k in range(3):
        await biggest.insert("bash", {"command": f"cat blob{k}"}, "y" * 20_000)
    newest = await Session.start(w, ws, title=LONG, started=1_764_000_200.0)
    await newest.insert("bash", {"command": "echo hi"}, "hi")
    await w.close()
    return Three(newest.id, biggest.id, saver.id)


def _table_order(screen: SessionsScreen) -> list[str]:
    """The row keys in the order the table draws them."""
    table = screen.query_one(DataTable)
    return [str(table.coordinate_to_cell_key((i, 0)).row_key.value)
            for i in range(table.row_count)]  # fmt: skip


async def _shown(pilot: Pilot[None], screen: SessionsScreen, want: list[str]) -> None:
    await wait_for(pilot, lambda: screen.session_ids == want)
    await pilot.pause()
    assert _table_order(screen) == want


async def test_the_three_orders_differ_and_each_is_right(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    t = await _three(store)
    async with await Reader.open(store) as reader:
        rows = {r.id: r for r in await reader.sessions()}
    # The fixture's own figures: the three orders really differ.
    stored = sorted(rows, key=lambda i: -rows[i].chars_stored)
    saved = sorted(rows, key=lambda i: (-rows[i].chars_saved, -rows[i].started))
    assert stored == [t.biggest, t.saver, t.newest], {i: rows[i].chars_stored for i in rows}
    assert saved == [t.saver, t.newest, t.biggest], {i: rows[i].chars_saved for i in rows}
    assert rows[t.saver].chars_saved > 20_000 and rows[t.biggest].chars_saved == 0

    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(120, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await _shown(pilot, screen, [t.newest, t.biggest, t.saver])
        assert "newest" in screen.sub_title
        await pilot.press("s")
        await _shown(pilot, screen, [t.biggest, t.saver, t.newest])
        assert screen.sort == "size" and "size" in screen.sub_title
        await pilot.press("s")
        # Savings: the most saved first; sessions that saved nothing, newest first.
        await _shown(pilot, screen, [t.saver, t.newest, t.biggest])
        assert screen.sort == "savings" and "savings" in screen.sub_title
        await pilot.press("s")
        await _shown(pilot, screen, [t.newest, t.biggest, t.saver])
        assert screen.sort == "newest"


async def test_filter_by_a_word_of_the_title(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    t = await _three(store)
    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(120, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await _shown(pilot, screen, [t.newest, t.biggest, t.saver])
        await pilot.press("f", *"billing")  # typed in lower case: the title says "Billing"
        await _shown(pilot, screen, [t.biggest])
        assert "filter 'billing'" in screen.sub_title
        await pilot.press(*["backspace"] * 7, *"zebra migration")  # every word must match
        await _shown(pilot, screen, [t.saver])
        await pilot.press(*["backspace"] * 15, *"zebra billing")  # words of two titles: none
        await wait_for(pilot, lambda: screen.has_class("-empty"))
        assert screen.session_ids == []
        # A word past the part of the title the column shows still finds it.
        await pilot.press(*["backspace"] * 13, *"quokka")
        await _shown(pilot, screen, [t.newest])
        table = screen.query_one(DataTable)
        assert (
            "quokka" not in str(table.get_row_at(0)[0]) and str(table.get_row_at(0)[0])[-1] == "…"
        )
        # A filter keeps the order chosen.
        await pilot.press(*["backspace"] * 6, *"the", "enter", "s")
        await _shown(pilot, screen, [t.biggest, t.saver, t.newest])
        await pilot.press("escape")
        await _shown(pilot, screen, [t.biggest, t.saver, t.newest])
        assert "filter" not in screen.sub_title


async def test_savings_of_sub_agents_count_for_their_parent(tmp_path: Path) -> None:
    """Issue 16 §4.5: a parent whose sub-agent did the reading saved nothing itself; sorted by
    savings it sank to the end with 0. Its tree's saving sorts it, and its row says it."""
    store = tmp_path / "store.db"
    t = await _three(store)
    w = await Writer.open(store)
    ws = "/srv/projects/shop"
    parent = await Session.start(w, ws, title="Ask a sub-agent", started=1_764_000_300.0)
    await parent.insert("bash", {"command": "echo go"}, "go")
    child = await Session.start(w, ws, title="the sub-agent", started=1_764_000_301.0,
                                parent_session=parent.id)  # fmt: skip
    await child.insert("bash", {"command": "seq 0 9999"}, "\n".join(map(str, range(10000))))
    await w.close()
    async with await Reader.open(store) as reader:
        rows = {r.id: r for r in await reader.sessions()}
    assert rows[parent.id].chars_saved == 0 < rows[t.saver].chars_saved < rows[child.id].chars_saved
    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(120, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await pilot.press("s", "s")
        await _shown(pilot, screen, [parent.id, child.id, t.saver, t.newest, t.biggest])
        table = screen.query_one(DataTable)
        saved = [str(c.label) for c in table.columns.values()].index("Saved")
        cells = [str(table.get_cell_at((i, saved))) for i in range(2)]
        # The parent's row: its own saving (0) and its sub-agent's; the sub-agent's: its own.
        assert cells[0] == cells[1] != "0", cells
