"""Search (issue 10.4): `/` finds messages, calls, thinking and summaries as well as results;
`n` lands on the matching line inside a long block and marks it; a count past the query's limit
says so; `/` in the session list and `ctxview search` search every session."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from readable_fixture import Readable, make
from textual.pilot import Pilot
from textual.widgets import OptionList, Static
from viewer_helpers import at_top, block_by_rid, ready, settle, view_of, wait_for

from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.search import SearchScreen
from ctxview.viewer.screens.transcript import TranscriptScreen

SIZE = (110, 40)
CTXVIEW = str(Path(sys.executable).with_name("ctxview"))


@pytest.fixture
def readable(tmp_path: Path) -> Readable:
    return asyncio.run(make(tmp_path))


def status(pilot: Pilot[None]) -> str:
    return str(pilot.app.screen.query_one("#status", Static).render())


async def search(pilot: Pilot[None], words: str) -> None:
    await pilot.press("slash", *words, "enter")
    view = view_of(pilot)
    await wait_for(pilot, lambda: view.hit_line is not None or "Nothing" in status(pilot))
    await settle(pilot, view)


def hit_row(pilot: Pilot[None]) -> str:
    """The screen's line marked as the hit's ("» " in the gutter)."""
    rows = [r for r in view_of(pilot).screen_text().split("\n") if r.startswith("» ")]
    assert len(rows) == 1, view_of(pilot).screen_text()
    return rows[0]


async def test_slash_finds_messages_calls_thinking_and_summaries(readable: Readable) -> None:
    app = CtxviewApp(readable.store, session=readable.session_id, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await at_top(pilot)
        # Thinking: the message is found, its thinking opened in place on the hit's line.
        await search(pilot, "zebra")
        assert "zebra-thought" in hit_row(pilot) and "hit 1/1 for 'zebra'" in status(pilot)
        assert view.cursor_block is view.blocks[1] and view.blocks[1].detail_open
        # A call's arguments (folded JSON, opened to show the line).
        await search(pilot, "carts")
        assert "FROM carts" in hit_row(pilot)
        assert view.cursor_block is block_by_rid(view, readable.ids["mcp"])
        # A message's text, and a compaction's summary.
        await search(pilot, "screenshot")
        assert "screenshot" in hit_row(pilot)
        await search(pilot, "okapi")
        assert "okapi" in hit_row(pilot) and view.cursor_block.kind == "boundary"
        # Several hits: n goes on, in the session's order.
        await search(pilot, "cart")
        first = view.cursor_block
        n = len(pilot.app.screen.hits)  # type: ignore[attr-defined]
        assert n >= 4 and f"hit 1/{n} for 'cart'" in status(pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: view.cursor_block is not first)
        assert f"hit 2/{n}" in status(pilot)


async def test_n_lands_on_the_matching_line_of_a_long_block(readable: Readable) -> None:
    app = CtxviewApp(readable.store, session=readable.session_id, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await at_top(pilot)
        long = block_by_rid(view, readable.ids["long"])
        # The model saw line 900 only in the stored text behind the elision: it opens there.
        await search(pilot, "needle")
        assert view.cursor_block is long and long.elision_open
        assert "line 900: the needle is here" in hit_row(pilot)
        # The block's top is far above the line that matched: it is the line that is shown.
        assert view.scroll_offset.y > view.heights.offset(long.index) + 100
        # In the stored text the block opens on the line itself.
        await pilot.press("m")
        await settle(pilot, view)
        await search(pilot, "needle")
        assert "line 900: the needle is here" in hit_row(pilot) and long.open


async def test_a_count_past_the_limit_says_so(readable: Readable) -> None:
    app = CtxviewApp(readable.store, session=readable.session_id, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, TranscriptScreen)
        screen.SEARCH_LIMIT = 2
        await search(pilot, "cart")
        assert "hit 1/2+ for 'cart'" in status(pilot)


async def test_slash_in_the_session_list_searches_every_session(readable: Readable) -> None:
    app = CtxviewApp(readable.store, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.query("DataTable"))
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, SearchScreen))
        await pilot.press(*"modules", "enter")
        screen = pilot.app.screen
        assert isinstance(screen, SearchScreen)
        await wait_for(pilot, lambda: screen.hits)
        # Found in the parent (the Task's result) and in its sub-agent (its messages).
        assert {h.session for h in screen.hits} == {"s-read", "s-sub"}
        text = str(screen.query_one("#search-status", Static).render())
        assert f"{len(screen.hits)} hits in 2 sessions" in text
        options = screen.query_one(OptionList)
        target = next(i for i, h in enumerate(screen.hits) if h.session == "s-sub")
        options.highlighted = target
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TranscriptScreen))
        view = view_of(pilot)
        await wait_for(pilot, lambda: view.hit_line is not None)
        await settle(pilot, view)
        assert "modules" in hit_row(pilot)


def test_ctxview_search_command(readable: Readable) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CTXVIEW, "--store", str(readable.store), "search", *args],
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    done = run("okapi", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["more"] is False
    assert [(h["session"], h["kind"]) for h in out["hits"]] == [("s-read", "compaction")]
    assert "okapi" in out["hits"][0]["snippet"]
    # Every session, or one; thinking and calls are found too.
    kinds = {h["kind"] for h in json.loads(run("zebra", "--json").stdout)["hits"]}
    assert kinds == {"message"}
    assert json.loads(run("carts", "--json").stdout)["hits"][0]["tool"] == "mcp__db__query"
    both = {h["session"] for h in json.loads(run("modules", "--json").stdout)["hits"]}
    assert both == {"s-read", "s-sub"}
    one = json.loads(run("modules", "--session", "s-sub", "--json").stdout)["hits"]
    assert {h["session"] for h in one} == {"s-sub"}
    text = run("cart", "--limit", "2")
    assert text.returncode == 0 and text.stdout.strip().endswith(
        "2+ hits (the first 2; --limit shows more)"
    )
    none = run("nothing-like-this")
    assert none.returncode == 1 and none.stdout.strip() == "Nothing matches 'nothing-like-this'."
