"""Real sessions read well (issue 10.2): Markdown in the one Line-API view with a key for the raw
text, thinking folded and opened in place, a readable form per common tool, an image's
placeholder, no empty header for a turn of tool calls only; and their snapshots."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from readable_fixture import Readable, make
from textual.pilot import Pilot
from viewer_helpers import at_top, block_by_rid, ready, settle, wait_for

from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.transcript import TranscriptScreen

SIZE = (110, 48)
REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
REAL_SESSION = REALDATA / "claude-code-log" / "-experiments-worktrees"


@pytest.fixture
def readable(tmp_path: Path) -> Readable:
    return asyncio.run(make(tmp_path))


def app_for(r: Readable | Path, session: str | None = None) -> CtxviewApp:
    store = r.store if isinstance(r, Readable) else r
    sid = r.session_id if isinstance(r, Readable) else session
    return CtxviewApp(store, session=sid, theme="ctxview-dark", watch=False)


async def test_markdown_thinking_and_raw(readable: Readable) -> None:
    async with app_for(readable).run_test(size=SIZE) as pilot:
        view = await at_top(pilot)
        message = view.blocks[1]
        text = view.block_text(message)
        # Rendered: no Markdown marks, the structure drawn.
        assert "Current Configuration Files" in text and "###" not in text and "**" not in text
        assert "• first point" in text and "1. nested one" in text and "▎ A quoted line." in text
        assert "│ def total(items: list[int]) -> int:" in text and "╭ python" in text
        assert "the spec (https://example.org/spec)" in text
        # The table's rows, with box lines (opened: the whole message).
        view.move_to(message)
        await pilot.press("space")
        await settle(pilot, view)
        text = view.block_text(message)
        assert "│ app.py  │   120 │" in text and "├─────────┼───────┤" in text
        # Thinking: folded to one line, opened in place with t, folded again.
        assert "✻ thinking · 3 lines  (t opens)" in text and "zebra-thought" not in text
        await pilot.press("t")
        await settle(pilot, view)
        assert "┆ zebra-thought" in view.block_text(message)
        await pilot.press("t")
        await settle(pilot, view)
        assert "zebra-thought" not in view.block_text(message)
        # r: the raw text, and back.
        await pilot.press("r")
        await settle(pilot, view)
        assert "### **Current Configuration Files**" in view.block_text(message)
        await pilot.press("r")
        await settle(pilot, view)
        assert "###" not in view.block_text(message)


SUMMARY = """This session is being continued from a previous conversation.

Analysis:
1. **Initial Request**: The user asked for the cart total to be fixed in `src/app.py`.
2. **Fix**: `total()` now sums *every* item; the test passes.

Summary: the cart total is fixed."""


async def test_a_compaction_summary_is_markdown_as_messages_are(tmp_path: Path) -> None:
    """Issue 16 §4.2: Claude Code's summary is the model's Markdown; drawn raw, its `**` and
    backticks stood among rendered messages. `r` shows it raw, as it does a message."""
    from ctxview.engine.session import Session
    from ctxview.store import Writer

    ws = tmp_path / "ws"
    ws.mkdir()
    writer = await Writer.open(tmp_path / "store.db")
    s = await Session.start(writer, ws, title="summary", session_id="s-summary")
    await s.message("user", "Fix the **cart** total.")
    await s.compact(SUMMARY)
    await writer.close()
    app = CtxviewApp(tmp_path / "store.db", session="s-summary", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await at_top(pilot)
        boundary = view.outline.boundaries[0]
        view.move_to(boundary)
        await pilot.press("enter")  # opens the folded summary
        await settle(pilot, view)
        text = view.block_text(boundary)
        assert "1. Initial Request: The user asked for the cart total to be fixed in src/app.py" \
            in text, text  # fmt: skip
        assert "**" not in text and "`" not in text
        assert "2. Fix: total() now sums every item; the test passes." in text
        assert "Summary: the cart total is fixed." in text
        await pilot.press("r")
        await settle(pilot, view)
        text = view.block_text(boundary)
        assert "1. **Initial Request**: The user asked" in text and "`total()`" in text
        await pilot.press("r")
        await settle(pilot, view)
        assert "**" not in view.block_text(boundary)


async def test_tool_forms_image_and_no_empty_header(readable: Readable) -> None:
    async with app_for(readable).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        ids = readable.ids

        def text(name: str) -> str:
            return view.block_text(block_by_rid(view, ids[name]))

        await pilot.press("home")
        await settle(pilot, view)
        # A turn of tool calls only draws nothing: no "● assistant" before the checklist.
        empty = view.blocks[2]
        assert empty.kind == "message" and view.block_text(empty) == ""
        assert view.heights.get(empty.index) == 0
        for name in ids:
            view.move_to(block_by_rid(view, ids[name]))
            await settle(pilot, view)
        assert "▸ TodoWrite 1 of 3 done" in text("todo")
        assert "☑ Read the cart code" in text("todo") and "◐ Fix the total" in text("todo")
        assert "☐ Run the tests" in text("todo")
        assert "▸ Task Explore the codebase · Explore" in text("task")
        assert "┆ prompt · 16 lines  (t opens)" in text("task") and "summarise" not in text("task")
        assert "↳ sub-agent Explore the codebase · 1 result" in text("task")
        assert "┆ 1. Read the cart code" in text("plan") and "**" not in text("plan")
        assert "? Total: Which total do you mean?" in text("ask")
        assert "○ Cart — the basket's sum" in text("ask")
        assert "▸ WebFetch https://example.org/cart" in text("fetch")
        assert "▸ WebSearch cart total rounding" in text("websearch")
        assert "▸ Write src/hello.py  (2 lines)" in text("write")
        assert "▸ mcp__db__query sql: SELECT *…, database: shop" in text("mcp")
        # t opens a call's detail in place: the Task's prompt as Markdown, Write's file, JSON.
        for name, inside in (("task", "• summarise each one"), ("write", "return f'Hello"),
                             ("mcp", '"database": "shop"')):  # fmt: skip
            view.move_to(block_by_rid(view, ids[name]))
            await pilot.press("t")
            await settle(pilot, view)
            assert inside in text(name), text(name)
        # The image in the user's message: a placeholder with its type and size.
        shot = next(b for b in view.blocks if "screenshot" in view.block_text(b))
        assert "▣ image  image/png · 29.3 KB" in view.block_text(shot)
        assert "base64" not in view.block_text(shot)


async def test_enter_on_a_task_opens_its_sub_agent(readable: Readable) -> None:
    async with app_for(readable).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        view.move_to(block_by_rid(view, readable.ids["task"]))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TranscriptScreen)
                       and pilot.app.screen.session_id == readable.child_id)  # fmt: skip
        child = await ready(pilot)
        assert "app.py" in child.screen_text()


# Snapshots


def test_snapshot_markdown(snap_compare, readable: Readable) -> None:  # type: ignore[no-untyped-def]
    async def top(pilot: Pilot[None]) -> None:
        view = await ready(pilot)
        await pilot.press("home", "down", "space", "t")
        await settle(pilot, view)

    assert snap_compare(app_for(readable), terminal_size=SIZE, run_before=top)


def test_snapshot_todowrite_and_task(snap_compare, readable: Readable) -> None:  # type: ignore[no-untyped-def]
    async def todo(pilot: Pilot[None]) -> None:
        view = await ready(pilot)
        view.move_to(block_by_rid(view, readable.ids["todo"]), top=True)
        await settle(pilot, view)
        view.move_to(block_by_rid(view, readable.ids["task"]))
        await pilot.press("t")
        await settle(pilot, view)

    assert snap_compare(app_for(readable), terminal_size=SIZE, run_before=todo)


def test_snapshot_sub_agent(snap_compare, readable: Readable) -> None:  # type: ignore[no-untyped-def]
    async def sub(pilot: Pilot[None]) -> None:
        view = await ready(pilot)
        view.move_to(block_by_rid(view, readable.ids["task"]))
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "session_id", "") == "s-sub")
        child = await ready(pilot)
        await pilot.press("home")
        await settle(pilot, child)

    assert snap_compare(app_for(readable), terminal_size=SIZE, run_before=sub)


@pytest.fixture
def real_store(tmp_path: Path) -> Path:
    if not REAL_SESSION.exists():
        pytest.skip(f"no real Claude Code session at {REAL_SESSION}")
    store = tmp_path / "real.db"
    ctxview = str(Path(sys.executable).with_name("ctxview"))
    subprocess.run([ctxview, "--store", str(store), "import", str(REAL_SESSION)], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    return store


@pytest.mark.realdata
def test_snapshot_real_session_top(snap_compare, real_store: Path) -> None:  # type: ignore[no-untyped-def]
    app = app_for(real_store, "cc-ef958aa1-0e93-49f0-bb71-150f63befcd1")
    assert snap_compare(app, terminal_size=SIZE, run_before=at_top)


@pytest.mark.realdata
def test_snapshot_real_session_80x24(snap_compare, real_store: Path) -> None:  # type: ignore[no-untyped-def]
    app = app_for(real_store, "cc-ef958aa1-0e93-49f0-bb71-150f63befcd1")
    assert snap_compare(app, terminal_size=(80, 24), run_before=at_top)
