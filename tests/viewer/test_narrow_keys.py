"""Issue 16 §4.4 at 80×24: a long title gives way (with an ellipsis) to the session's id and
state; the footer shows the palette and `]` in a session with a boundary, the screen's main keys
first; `x` wraps at spaces and shows a call's arguments readably; `?` lists each key once; `r`
says that the view is raw."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from rich.console import Console
from store_fixture import fill
from test_narrow_and_list import shown_keys
from textual.widgets import Static
from viewer_helpers import open_request, ready, settle, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.context import ContextScreen
from ctxview.viewer.screens.help import HelpScreen, keys_table
from ctxview.viewer.widgets.wrapped_text import WrappedText

SIZE = (80, 24)
TITLE = "Make the cart total round to cents and fix the failing checkout tests in the web shop"
PLAN = ("I will read the cart module first, then change the rounding of the total so that "
        "every checkout test passes again, and finally run the whole suite once more.")  # fmt: skip
SCRIPT = "cd src\ngrep -n total cart.py\necho done"


async def _store(tmp: Path) -> tuple[Path, str]:
    filled = await fill(tmp)  # has a compaction boundary
    async with await Writer.open(filled.store) as writer:
        await writer.update_session(filled.session_id, title=TITLE)
        s = await Session.resume(writer, filled.session_id)
        await s.message("assistant", PLAN)
        await s.run("bash", {"command": SCRIPT, "description": "Find the total"})
        await s.message("assistant", "The total is found.")  # a request that sends the call
    return filled.store, filled.session_id


def _text(widget: Static) -> str:
    return str(widget.render())


async def test_the_header_gives_way_and_the_footer_shows_what_matters(tmp_path: Path) -> None:
    store, sid = await _store(tmp_path)
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=SIZE) as pilot:
        await ready(pilot)
        title = pilot.app.screen.query_one("#transcript-title", Static)
        line = _text(title)
        assert line.endswith(f" · {sid} · not live: no writer"), line
        assert "… · " in line and line.startswith(TITLE[:20]), line
        assert len(line) <= SIZE[0] - 2  # the title line's padding
        keys = shown_keys(pilot.app)
        assert keys[-3:] == ["^p Palette", "q Quit", "? Keys"], keys
        assert keys[:4] == ["g Jump", "/ Search", "] Next boundary", "m Model/stored"], keys
        # r: the status line says the messages are raw, and says it no more once back.
        status = pilot.app.screen.query_one("#status", Static)
        assert "raw" not in _text(status)
        await pilot.press("r")
        await wait_for(pilot, lambda: "messages raw" in _text(status))
        assert _text(status).endswith("following"), _text(status)  # it still fits
        await pilot.press("r")
        await wait_for(pilot, lambda: "raw" not in _text(status))


async def test_the_keys_screen_lists_each_key_once(tmp_path: Path) -> None:
    store, sid = await _store(tmp_path)
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=(100, 60)) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))
        helper = pilot.app.screen
        assert isinstance(helper, HelpScreen)
        table = keys_table(helper._others())  # what #help-keys shows
        console = Console(width=96, record=True)
        console.print(table)
        rows = [r.strip() for r in console.export_text().split("\n") if r.strip()]
        keys = Counter(re.split(r"\s{2,}", r)[0] for r in rows if len(re.split(r"\s{2,}", r)) > 1)
        assert [k for k, n in keys.items() if n > 1] == [], keys
        # t and r once: by their screen's name (the transcript's), not again under "Also here".
        assert keys["t (transcript)"] == keys["r (transcript)"] == 1, keys
        assert "t" not in keys and "r" not in keys, keys
        assert keys["space"] == 1, keys  # what the list lacks is still added
        assert keys["x (transcript)"] == 1 and "x" not in keys, keys  # named in "Requests"


async def test_x_wraps_at_spaces_and_shows_calls_readably(tmp_path: Path) -> None:
    store, sid = await _store(tmp_path)
    async with CtxviewApp(store, session=sid, watch=False).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        view.move_to(view.blocks[-1])
        await settle(pilot, view)
        screen = await open_request(pilot)
        assert isinstance(screen, ContextScreen)
        text = screen.text
        assert "\\n" not in text, text
        assert (
            "call bash\n  command:\n    cd src\n    grep -n total cart.py\n    echo done\n"
            "  description: Find the total"
        ) in text, text
        # The message's rows break between words: each word of it is whole on one row.
        body = screen.query_one(WrappedText)
        rows = [body.row(y) for y in range(body.virtual_size.height)]
        start = next(i for i, r in enumerate(rows) if r.startswith("assistant: I will read"))
        plan_rows = []
        for r in rows[start:]:
            plan_rows.append(r)
            if "once more." in r:
                break
        assert len(plan_rows) > 1
        words = set(" ".join(plan_rows).split())
        assert set(f"assistant: {PLAN}".split()) <= words, plan_rows
        assert all(len(r) <= body.text_width for r in plan_rows)
        # Still every character once, in order.
        assert "".join(rows) == "".join(text.split("\n"))
