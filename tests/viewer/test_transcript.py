"""The transcript screen over a real store filled by the engine: every interaction of issue 3."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from store_fixture import Filled, fill
from viewer_helpers import block_by_rid, ready, settle, view_of, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.store.records import Body, Event
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.result import ResultScreen
from ctxview.viewer.screens.transcript import TranscriptScreen

SIZE = (120, 50)
CTXVIEW = str(Path(sys.executable).parent / "ctxview")


@pytest.fixture
async def filled(tmp_path: Path) -> Filled:
    return await fill(tmp_path)


def app_for(f: Filled, **kw: object) -> CtxviewApp:
    return CtxviewApp(f.store, session=f.session_id, **kw)  # type: ignore[arg-type]


async def test_every_kind_of_block_renders(filled: Filled) -> None:
    async with app_for(filled).run_test(size=(120, 300)) as pilot:
        view = await ready(pilot)
        await pilot.press("home")
        await settle(pilot, view)
        text = view.screen_text()
        for needle in [
            "● user", "[/bold] stays text", "input 1,200", "▸ read src/app.py",
            "[#1000 src/app.py lines 1-90 of 90 sha", "Unchanged since #1000",
            "Same result as #1003", "▸ bash pytest -q", "+1 −1", "+3 −1", "@@ -8,7 +8,7 @@",
            "[#1008 recall #1005 lines 1-5 of 1501]", "There is no file src/missing.py",
            "compaction 1", "Files read before this summary", "+82 lines",
        ]:  # fmt: skip
            assert needle in text, needle
        # ANSI colour codes are rendered, never printed raw.
        assert "\x1b" not in text and "PASSED tests/test_app.py::test_0" in text


async def test_cursor_moves_and_enter_opens_a_fold(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        assert view.cursor == len(view.blocks) - 1  # at the tail
        await pilot.press("home")
        assert view.cursor == 0
        await pilot.press("down", "down")
        block = view.blocks[view.cursor]
        assert block.rid == filled.ids["read"]
        await settle(pilot, view)
        assert "+82 lines" in view.block_text(block)
        await pilot.press("enter")
        await settle(pilot, view)
        assert block.open and "+82 lines" not in view.block_text(block)
        assert "89:     return x + 29" in view.block_text(block)
        await pilot.press("space")
        assert not block.open
        await pilot.press("end")
        assert view.cursor == len(view.blocks) - 1 and view.following


async def test_click_on_fold_line_opens_it(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await pilot.press("home")
        await settle(pilot, view)
        lines = view.screen_text().split("\n")
        y = next(i for i, line in enumerate(lines) if "+82 lines" in line)
        await pilot.click("#transcript", offset=(5, y))
        block = block_by_rid(view, filled.ids["read"])
        await wait_for(pilot, lambda: block.open)


async def test_enter_on_stub_jumps_to_full_result_and_history_walks(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        stub = block_by_rid(view, filled.ids["unchanged"])
        view.move_to(stub)
        await pilot.press("enter")
        assert view.cursor_block is block_by_rid(view, filled.ids["read"])
        await pilot.press("alt+left")
        assert view.cursor_block is stub
        await pilot.press("alt+right")
        assert view.cursor_block.rid == filled.ids["read"]  # type: ignore[union-attr]
        same = block_by_rid(view, filled.ids["same"])
        view.move_to(same)
        await pilot.press("enter")
        assert view.cursor_block.rid == filled.ids["grep"]  # type: ignore[union-attr]


async def test_enter_then_enter_opens_result_screen(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        view.move_to(block_by_rid(view, filled.ids["grep"]))
        await pilot.press("enter")  # opens the fold
        await pilot.press("enter")  # opens the result
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
        assert pilot.app.screen.rid == filled.ids["grep"]  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TranscriptScreen))


async def test_click_on_an_id_in_the_models_words_opens_it(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        capped = block_by_rid(view, filled.ids["capped"])
        message = view.blocks[capped.index + 1]
        view.move_to(message, top=True)
        await settle(pilot, view)
        lines = view.screen_text().split("\n")
        y = next(i for i, line in enumerate(lines) if "The run #1005 failed" in line)
        x = lines[y].index("#1005") + 1
        await pilot.click("#transcript", offset=(x, y))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
        assert pilot.app.screen.rid == filled.ids["capped"]  # type: ignore[attr-defined]


async def test_elision_opens_the_middle_in_place(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        block = block_by_rid(view, filled.ids["capped"])
        view.move_to(block)
        await pilot.press("enter")  # the fold first
        await settle(pilot, view)
        text = view.block_text(block)
        assert "lines elided, full output #1005]" in text and "test_700" not in text
        await pilot.press("e")
        await wait_for(pilot, lambda: "test_700" in view.block_text(block))
        assert "elided lines, from the stored text" in view.block_text(block)
        await pilot.press("e")
        assert "test_700" not in view.block_text(block)


async def test_m_shows_the_stored_text(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        stub = block_by_rid(view, filled.ids["unchanged"])
        view.move_to(stub)
        await settle(pilot, view)
        assert "1: def f0(x):" not in view.block_text(stub)
        await pilot.press("m")
        await wait_for(pilot, lambda: "1: def f0(x):" in view.block_text(stub))
        assert "stored text" in str(pilot.app.screen.query_one("#status").render())
        await pilot.press("m")
        assert not view.stored_mode


async def test_boundaries_step_and_stale_links(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await pilot.press("home")
        await pilot.press("right_square_bracket")
        boundary = view.cursor_block
        assert boundary is not None and boundary.kind == "boundary"
        await settle(pilot, view)
        text = view.block_text(boundary)
        assert "compaction 1" in text and "src/app.py" in text and "#1000" in text
        assert "not in context" not in text  # the table names what it keeps
        await pilot.press("down")
        after = view.cursor_block
        # The note beside the line, not inside the model's words (issue 16 §1.11).
        assert "mention #1000.  ◂ #1000 not in context since boundary 1" in view.block_text(after)  # type: ignore[arg-type]
        await pilot.press("left_square_bracket")
        assert view.cursor_block is boundary
        # The summary folds and opens.
        await pilot.press("enter")
        assert boundary.open and "And the end." in view.block_text(boundary)


async def test_jump_prompt_lands_or_says_why_not(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await pilot.press("g", *"1003", "enter")
        assert view.cursor_block.rid == 0x1003  # type: ignore[union-attr]
        await pilot.press("number_sign", *"#1001", "enter")
        assert view.cursor_block.rid == 0x1001  # type: ignore[union-attr]
        await pilot.press("g", *"beef", "enter")
        status = str(pilot.app.screen.query_one("#status").render())
        assert "There is no result #beef in this session." in status
        assert view.cursor_block.rid == 0x1001  # type: ignore[union-attr]
        await pilot.press("alt+left")
        assert view.cursor_block.rid == 0x1003  # type: ignore[union-attr]


async def test_jump_option_opens_there(filled: Filled) -> None:
    async with app_for(filled, jump="#1004").run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await wait_for(pilot, lambda: view.cursor_block and view.cursor_block.rid == 0x1004)
        assert not view.following


async def test_search_finds_hits_and_n_steps(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await pilot.press("home")
        await pilot.press("slash", *"return", "enter")
        screen = pilot.app.screen
        assert isinstance(screen, TranscriptScreen)
        await wait_for(pilot, lambda: view.hit_line is not None)
        assert len(screen.hits) >= 3
        # A hit is an event (a result, a call, a message): the cursor goes to its block.
        first = view.cursor_block
        assert first is view.outline.block_at_seq(screen.hits[0].seq)
        await pilot.press("n")
        second = view.outline.block_at_seq(screen.hits[1].seq)
        await wait_for(pilot, lambda: view.cursor_block is second)
        await pilot.press("N")
        await wait_for(pilot, lambda: view.cursor_block is first)
        assert f"hit 1/{len(screen.hits)}" in str(screen.query_one("#status").render())
        # The words are marked in the results on screen.
        assert view.words == ("return",)
        await settle(pilot, view)
        block = view.cursor_block
        strips = view._strips_for(block, view.body_width)  # type: ignore[arg-type]
        hit = view.palette.hit
        marked = [
            seg.text
            for strip in strips or []
            for seg in strip
            if seg.style and seg.style.bgcolor == hit.bgcolor
        ]
        assert marked and all(m.lower() == "return" for m in marked)


async def test_result_screen_facts_search_and_links(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        view.move_to(block_by_rid(view, filled.ids["read"]))
        await pilot.press("enter", "enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
        screen = pilot.app.screen
        await wait_for(pilot, lambda: getattr(screen, "view", None) is not None)
        header = str(screen.query_one("#result-header").render())
        assert "1 stub and 0 recalls point back at it: #1002 unchanged" in header
        assert "src/app.py: #1000 read full → #1002 read unchanged → #1006 edit" in header
        assert (
            " 90     return x + 29" in "\n".join(screen.view.render_line(y).text for y in range(60))
            or len(screen.view.lines) == 90
        )
        await pilot.press("slash", *"f17", "enter")
        assert "match 1/1" in str(screen.query_one("#result-status").render())
        screen.action_open_rid(0x1002)
        # Its view too: the screen has its rid from the start, its keys once it is mounted (a
        # key pressed before went to the screen below, on a loaded machine).
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "rid", None) == 0x1002
                       and getattr(pilot.app.screen, "view", None) is not None)  # fmt: skip
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TranscriptScreen))
        assert view_of(pilot).cursor_block.rid == 0x1002  # type: ignore[union-attr]


async def test_live_rows_are_followed_at_the_tail(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        writer = await Writer.open(filled.store)
        try:
            s = await Session.resume(writer, filled.session_id)
            await s.insert("bash", {"command": "echo live"}, "live output")
            rid = s.last.rid  # type: ignore[union-attr]
            await wait_for(pilot, lambda: view.outline.block_of(rid) is not None)
            assert view.following and view.cursor_block.rid == rid  # type: ignore[union-attr]
            await settle(pilot, view)
            assert "live output" in view.screen_text()
        finally:
            await writer.close()


async def test_scrolled_up_counts_new_rows_and_end_returns(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await pilot.press("home")
        top = view.scroll_offset.y
        writer = await Writer.open(filled.store)
        try:
            s = await Session.resume(writer, filled.session_id)
            await s.insert("bash", {"command": "echo 1"}, "one")
            await s.insert("bash", {"command": "echo 2"}, "two")
            await wait_for(pilot, lambda: view.new_rows == 2)
        finally:
            await writer.close()
        assert view.scroll_offset.y == top and view.cursor == 0
        note = pilot.app.screen.query_one("#new-rows")
        assert "2 new rows ↓" in str(note.render()) and note.has_class("-shown")
        await pilot.press("end")
        assert view.following and view.new_rows == 0 and not note.has_class("-shown")
        assert view.cursor == len(view.blocks) - 1
        # Scrolled up again, a click on the note goes back to the tail too.
        await pilot.press("home")
        writer = await Writer.open(filled.store)
        try:
            s = await Session.resume(writer, filled.session_id)
            await s.insert("bash", {"command": "echo 3"}, "three")
            await wait_for(pilot, lambda: note.has_class("-shown"))
        finally:
            await writer.close()
        await pilot.click("#new-rows")
        await wait_for(pilot, lambda: view.following and not note.has_class("-shown"))


async def test_a_running_call_gets_its_result(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        writer = await Writer.open(filled.store)
        try:
            await writer.append(filled.session_id, [Event(ts=1.0, kind="call", tool="bash",
                                call_ref="slow-1", args=json.dumps({"command": "sleep 1"}))])  # fmt: skip
            await wait_for(pilot, lambda: view.blocks[-1].call_ref == "slow-1")
            block = view.blocks[-1]
            await settle(pilot, view)
            assert "… running" in view.block_text(block)
            result = Event(ts=2.0, kind="result", tool="bash", call_ref="slow-1", rid=0x2000,
                           rkind="full", shown_chars=13, shown_lines=2, stored_chars=5,
                           stored_lines=1)  # fmt: skip
            await writer.append(
                filled.session_id, [result], [Body(0x2000, "[#2000]\nslept", "slept")]
            )
            await wait_for(pilot, lambda: block.rid == 0x2000)
            assert view.blocks[-1] is block
            await settle(pilot, view)
            assert "slept" in view.block_text(block) and "running" not in view.block_text(block)
        finally:
            await writer.close()


async def test_unknown_kinds_render_dim_not_crash(filled: Filled) -> None:
    writer = await Writer.open(filled.store)
    await writer.append(filled.session_id, [Event(ts=1.0, kind="telepathy", text="[b]hi[/b]")])
    await writer.close()
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        assert "‹telepathy› [b]hi[/b]" in view.screen_text()


async def test_sessions_screen_then_open(filled: Filled) -> None:
    async with CtxviewApp(filled.store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "SessionsScreen")
        pilot.app.post_message(
            __import__("ctxview.viewer.messages").viewer.messages.OpenSession(filled.session_id)
        )
        view = await ready(pilot)
        assert view.session_id == filled.session_id


def test_view_command_refuses_a_missing_store(tmp_path: Path) -> None:
    done = subprocess.run(
        [CTXVIEW, "view", "--store", str(tmp_path / "none.db")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert done.stderr.strip().startswith("ctxview: There is no store at")
    assert done.stderr.strip().count("\n") == 0


async def test_view_command_refuses_an_unknown_id(filled: Filled) -> None:
    done = subprocess.run(
        [CTXVIEW, "view", "--store", str(filled.store),
         "--jump", "#beef"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "There is no result #beef" in done.stderr


async def test_huge_stored_text_is_folded_and_capped_when_opened(filled: Filled) -> None:
    writer = await Writer.open(filled.store)
    s = await Session.resume(writer, filled.session_id)
    await s.insert("bash", {"command": "yes"}, "\n".join(f"y {i}" for i in range(300_000)))
    await s.insert("bash", {"command": "one long line"}, "x" * 3_000_000)
    big, wide = s.last.rid - 1, s.last.rid  # type: ignore[union-attr]
    await writer.close()
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await pilot.press("m")
        block = block_by_rid(view, big)
        view.move_to(block)
        await wait_for(pilot, lambda: "+299,992 lines" in view.block_text(block))
        await pilot.press("enter")
        await wait_for(pilot, lambda: "298,000 more lines: open" in view.block_text(block))
        assert view.heights.get(block.index) < 2100
        line = block_by_rid(view, wide)
        view.move_to(line)
        await wait_for(pilot, lambda: "+2,996,000 characters" in view.block_text(line))


async def test_typed_markup_in_the_jump_prompt_is_text(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("g", *"[b]x", "enter")
        status = str(pilot.app.screen.query_one("#status").render())
        assert "'[b]x' is not a result id" in status


async def test_jump_message_opens_the_session_there(filled: Filled) -> None:
    from ctxview.viewer.messages import Jump

    async with CtxviewApp(filled.store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "SessionsScreen")
        pilot.app.post_message(Jump(filled.session_id, 0x1003))
        view = await ready(pilot)
        await wait_for(pilot, lambda: view.cursor_block and view.cursor_block.rid == 0x1003)
        # A second jump lands in the same transcript, from the result screen too.
        view.post_message(
            __import__("ctxview.viewer.messages").viewer.messages.OpenResult(
                filled.session_id, 0x1000
            )
        )
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
        pilot.app.post_message(Jump(filled.session_id, 0x1001))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TranscriptScreen))
        await wait_for(pilot, lambda: view.cursor_block.rid == 0x1001)  # type: ignore[union-attr]


async def test_clicks_on_a_stub_hint_and_a_boundary_row(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        stub = block_by_rid(view, filled.ids["same"])
        view.move_to(stub, top=True)
        await settle(pilot, view)
        lines = view.screen_text().split("\n")
        y = next(i for i, line in enumerate(lines) if "↵ leads to #1003" in line)
        await pilot.click("#transcript", offset=(lines[y].index("↵ leads") + 3, y))
        await wait_for(pilot, lambda: view.cursor_block.rid == filled.ids["grep"])  # type: ignore[union-attr]
        boundary = view.outline.boundaries[0]
        view.move_to(boundary, top=True)
        await settle(pilot, view)
        lines = view.screen_text().split("\n")
        y = next(i for i, line in enumerate(lines) if "compaction 1" in line)
        await pilot.click("#transcript", offset=(lines[y].index("compaction 1") + 2, y))
        await wait_for(pilot, lambda: boundary.open)
        assert "And the end." in view.block_text(boundary)


async def test_page_keys_move_the_view_and_the_cursor(filled: Filled) -> None:
    async with app_for(filled).run_test(size=(120, 20)) as pilot:
        view = await ready(pilot)
        await pilot.press("home")
        await pilot.press("pagedown")
        top = view.scroll_offset.y
        assert top > 0
        start = view.heights.offset(view.cursor)
        assert top <= start < top + view.size.height
        await pilot.press("pagedown", "pageup")
        assert view.scroll_offset.y == top
        await pilot.press("pageup")
        assert view.scroll_offset.y == 0 and view.cursor == 0
        for _ in range(30):
            await pilot.press("pagedown")
        assert view.cursor == len(view.blocks) - 1


async def test_appending_never_lays_out_the_whole_transcript(filled: Filled) -> None:
    async with app_for(filled).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        rebuilds: list[int] = []
        view.heights.rebuild = lambda heights: rebuilds.append(len(heights))  # type: ignore[method-assign]
        rendered: list[int] = []
        original = view._strips_for

        def counting(block, width):  # type: ignore[no-untyped-def]
            rendered.append(block.index)
            return original(block, width)

        view._strips_for = counting  # type: ignore[method-assign]
        writer = await Writer.open(filled.store)
        try:
            s = await Session.resume(writer, filled.session_id)
            for i in range(3):
                await s.insert("bash", {"command": f"echo {i}"}, f"row {i}")
            await wait_for(pilot, lambda: view.outline.block_of(s.last.rid) is not None)  # type: ignore[union-attr]
        finally:
            await writer.close()
        await settle(pilot, view)
        assert rebuilds == []
        # Only blocks near the screen were laid out, never the whole transcript.
        assert set(rendered) <= set(range(len(view.blocks) - 15, len(view.blocks)))


async def test_an_unknown_session_is_a_sentence_not_a_crash(filled: Filled) -> None:
    async with CtxviewApp(filled.store, session="no-such-session").run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TranscriptScreen))
        title = pilot.app.screen.query_one("#transcript-title")
        await wait_for(pilot, lambda: "There is no session no-such-session" in str(title.render()))
        await pilot.press("g", "j", "down", "m", "slash", "escape")  # keys do nothing harmful


async def test_an_empty_session_fills_live(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    writer = await Writer.open(tmp_path / "store.db")
    s = await Session.start(writer, ws, title="empty", session_id="s-empty")
    async with CtxviewApp(tmp_path / "store.db", session="s-empty").run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        assert view.blocks == [] and view.screen_text().strip() == ""
        await s.message("user", "hello there")
        await s.insert("bash", {"command": "echo hi"}, "hi")
        await wait_for(pilot, lambda: len(view.blocks) == 2)
        await settle(pilot, view)
        assert "hello there" in view.screen_text() and "▸ bash echo hi" in view.screen_text()
        assert view.cursor == 1 and view.following
    await writer.close()


async def test_the_files_read_table_shows_a_long_paths_end(tmp_path: Path) -> None:
    """A deep path is cut at its start, so the row still names the file."""
    ws = tmp_path / "ws"
    deep = ws / "cmd" / "entire" / "cli" / "strategy" / "very_long_folder_name_for_a_test"
    deep.mkdir(parents=True)
    (deep / "manual_commit_handler.go").write_text("package strategy\n")
    rel = (deep / "manual_commit_handler.go").relative_to(ws).as_posix()
    assert len(rel) > 60
    async with await Writer.open(tmp_path / "store.db") as writer:
        session = await Session.start(writer, ws)
        await session.run("read", {"path": rel})
        await session.compact("Summary.")
    async with CtxviewApp(tmp_path / "store.db", session=session.id).run_test(size=SIZE) as pilot:
        view = await ready(pilot)
        await pilot.press("home", "right_square_bracket")
        boundary = view.cursor_block
        assert boundary is not None and boundary.kind == "boundary"
        await settle(pilot, view)
        text = view.block_text(boundary)
        assert "…" in text and "manual_commit_handler.go" in text
        assert "cmd/entire/cli" not in text
