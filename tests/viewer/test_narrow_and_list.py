"""Issue 10, points 3, 7, 8, 9, 10 in the real app over real stores (Pilot): the footer and the
session list at 80 columns; the cursor after PageDown inside a long opened block and after `c`
at the live tail; filter, sort, group and the empty state of the list; the context panel's first
paint before its replay ends; counts in words, the `x` screen's keys and folded lines."""

from __future__ import annotations

import re
from pathlib import Path

from rich.cells import cell_len
from store_fixture import fill
from textual.widgets import DataTable, Static
from textual.widgets._footer import FooterKey
from viewer_helpers import ready, settle, view_of, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.context import ContextScreen
from ctxview.viewer.screens.sessions import EMPTY, SessionsScreen, fit_columns
from ctxview.viewer.widgets import context_panel
from ctxview.viewer.widgets.context_panel import ContextPanel
from ctxview.viewer.widgets.footer import KeysFooter
from ctxview.viewer.widgets.wrapped_text import WrappedText, fold_starts


def shown_keys(app: CtxviewApp) -> list[str]:
    """The footer's keys on screen, whole, left to right: 'q Quit' and the like."""
    footer = app.screen.query_one(KeysFooter)
    keys = [k for k in footer.query(FooterKey) if k.display and k.region.width]
    keys.sort(key=lambda k: k.region.x)
    right = footer.region.right
    assert all(k.region.right <= right for k in keys), "a key runs past the footer's edge"
    return [f"{k.key_display} {k.description}" for k in keys]


async def _sessions(store: Path, n: int) -> None:
    w = await Writer.open(store)
    for i in range(n):
        ws = f"/srv/projects/{'tinyshop' if i % 2 else 'parser'}/a-rather-long/workspace/path"
        s = await Session.start(w, "/tmp", title=f"session {i}: " + "a long first prompt " * 6,
                                started=1_764_000_000.0 + i, source="claude-code" if i % 2
                                else "codex")  # fmt: skip
        await w.update_session(s.id, workspace=ws)
        for k in range(i):  # sizes differ: session i stores i results of i*100 chars
            await s.insert("bash", {"command": f"echo {k}"}, "x" * (i * 100 + 1))
    await w.close()


async def test_80_columns_keeps_quit_and_keys_and_the_list_fits(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await _sessions(store, 4)
    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await wait_for(pilot, lambda: len(screen.session_ids) == 4)
        await pilot.pause()
        keys = shown_keys(app)
        assert keys[-2:] == ["q Quit", "? Keys"], keys
        table = screen.query_one(DataTable)
        # No sideways scroll: every column that is shown fits, the title and state among them.
        assert table.max_scroll_x == 0 and table.virtual_size.width <= table.size.width
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[0] == "Title" and "State" in labels and "Workspace" not in labels
        await pilot.press("enter")
        await ready(pilot)
        keys = shown_keys(app)
        assert keys[-2:] == ["q Quit", "? Keys"] and "g Jump" in keys, keys
        await pilot.press("question_mark")  # the pinned key works
        await wait_for(pilot, lambda: "ctxview keys" in str(app.screen.query_one("#help-title",
                                                                                   Static).render()))  # fmt: skip


def test_columns_shrink_then_drop_widest_last() -> None:
    for width in range(30, 260, 7):
        cols = fit_columns(width)
        used = sum(w + 2 for _, _, w in cols) + 2
        assert used <= width or [c[0] for c in cols] == ["title"], (width, cols)
        assert cols[0][0] == "title"
    wide = [c[0] for c in fit_columns(200)]
    assert wide == ["title", "started", "results", "state", "saved", "source", "workspace"]
    assert [c[0] for c in fit_columns(80)] == ["title", "started", "results", "state", "saved"]


async def test_filter_sort_group_and_the_empty_state(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await _sessions(store, 4)
    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(120, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await wait_for(pilot, lambda: len(screen.session_ids) == 4)
        newest = list(screen.session_ids)
        await pilot.press("s")  # size: the biggest first
        await wait_for(pilot, lambda: screen.sort == "size")
        assert screen.session_ids == newest  # session 3 is both the newest and the biggest
        await pilot.press("s")
        assert screen.sort == "savings" and "savings" in screen.sub_title
        await pilot.press("s")
        assert screen.sort == "newest"
        await pilot.press("w")  # grouped by workspace: a heading per workspace
        await wait_for(pilot, lambda: screen.grouped)
        table = screen.query_one(DataTable)
        headings = [str(table.get_row_at(i)[0]) for i in range(table.row_count)
                    if not str(table.get_row_at(i)[1])]  # fmt: skip
        assert len(headings) == 2 and all("2 sessions" in h for h in headings), headings
        await pilot.press("w", "f")  # filter as you type: the workspace, the source
        for ch in "tinyshop":
            await pilot.press(ch)
        await wait_for(pilot, lambda: len(screen.session_ids) == 2)
        await pilot.press(*["backspace"] * 8, *"codex")
        await wait_for(pilot, lambda: len(screen.session_ids) == 2 and screen.session_ids
                       == [s for s in newest if s in screen.session_ids])  # fmt: skip
        await pilot.press(*"zzz")
        await wait_for(pilot, lambda: screen.has_class("-empty"))
        assert "No session matches" in str(screen.query_one("#sessions-empty", Static).render())
        await pilot.press("escape")  # clears the filter, back to the list
        await wait_for(pilot, lambda: len(screen.session_ids) == 4)
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(app.screen, "session_id", None) == newest[0])

    empty = tmp_path / "empty.db"
    await (await Writer.open(empty)).close()
    app = CtxviewApp(empty, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.screen.has_class("-empty"))
        said = str(app.screen.query_one("#sessions-empty", Static).render())
        assert said == EMPTY
        assert "`ctxview demo`" in said and "`ctxview import ~/.claude/projects`" in said


async def test_pagedown_inside_a_long_opened_block_keeps_the_cursor_on_screen(
    tmp_path: Path,
) -> None:
    filled = await fill(tmp_path)
    async with CtxviewApp(filled.store, session=filled.session_id, watch=False).run_test(
        size=(80, 24)
    ) as pilot:
        view = await ready(pilot)
        block = view.outline.block_of(filled.ids["capped"])
        assert block is not None
        view.move_to(block, top=True)
        await pilot.press("m")  # the stored text: 1,501 lines
        await settle(pilot, view)
        if not block.open:
            await pilot.press("enter")
        await settle(pilot, view)
        assert view.heights.get(block.index) > 100
        for _ in range(3):
            await pilot.press("pagedown")
            await pilot.pause()
            top, height = view.scroll_offset.y, view.size.height
            start = view.heights.offset(view.cursor_block.index)
            end = start + view.heights.get(view.cursor_block.index)
            assert start < top + height and end > top, "the cursor left the screen"
            assert view.cursor_block is block


async def test_c_at_the_live_tail_keeps_the_cursor_in_view(tmp_path: Path) -> None:
    filled = await fill(tmp_path)
    async with CtxviewApp(filled.store, session=filled.session_id, watch=False).run_test(
        size=(80, 24)
    ) as pilot:
        view = await ready(pilot)
        await pilot.press("end")
        await settle(pilot, view)
        last = view.blocks[-1]
        assert view.cursor_block is last
        await pilot.press("c")
        await wait_for(pilot, lambda: pilot.app.screen.query(ContextPanel))
        await settle(pilot, view)
        start = view.heights.offset(last.index)
        end = start + view.heights.get(last.index)
        top = view.scroll_offset.y
        assert end > top and start < top + view.size.height, "the cursor went under the panel"
        assert end <= top + view.size.height, "the last block's end is hidden by the panel"


async def test_the_panel_paints_before_its_replay_ends(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 10.9 at a small scale (bench/bench_viewer.py (f) measures 100,000 results): pages
    of a few events, so the panel paints figures (and its progress) before the replay is over."""
    monkeypatch.setattr(context_panel, "PAGE", 5)
    filled = await fill(tmp_path)
    async with CtxviewApp(filled.store, session=filled.session_id, watch=False).run_test(
        size=(100, 30)
    ) as pilot:
        await ready(pilot)
        await pilot.press("c")
        await wait_for(pilot, lambda: pilot.app.screen.query(ContextPanel))
        panel = pilot.app.screen.query_one(ContextPanel)
        await wait_for(pilot, lambda: panel.done_at is not None)
        assert panel.first_paint_at is not None and panel.first_paint_at < panel.done_at
        text = panel.render().plain
        assert "replaying" not in text and "request 1" not in text.split("\n")[0]
        assert panel.figures.fed == panel.figures.total
        # Shown again, the figures replayed before are kept: nothing is replayed again.
        fed = panel.figures.fed
        await pilot.press("c")
        await wait_for(pilot, lambda: not pilot.app.screen.query(ContextPanel))
        await pilot.press("c")
        await wait_for(pilot, lambda: pilot.app.screen.query(ContextPanel))
        again = pilot.app.screen.query_one(ContextPanel)
        assert again.figures is panel.figures and again.figures.fed == fed


def test_partial_figures_say_they_are_replaying() -> None:
    from ctxview.viewer.widgets.context_panel import ContextFigures, panel_text

    fig = ContextFigures.for_session({})
    fig.total, fig.fed = 200, 50
    text = panel_text(fig, 100, None, None).plain
    assert "replaying the session: 50 of 200 events (25%)" in text and "0 requests" in text


async def test_counts_in_words_and_the_x_screen(tmp_path: Path) -> None:
    filled = await fill(tmp_path)
    async with CtxviewApp(filled.store, session=filled.session_id, watch=False).run_test(
        size=(80, 24)
    ) as pilot:
        await ready(pilot)
        status = str(pilot.app.screen.query_one("#status", Static).render())
        assert " results" in status and not re.search(r"\b1 results", status)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ContextScreen))
        screen = pilot.app.screen
        body = screen.query_one(WrappedText)
        await wait_for(pilot, lambda: bool(screen.text))
        await pilot.pause()
        keys = shown_keys(pilot.app)
        assert "[ Previous request" in keys and "] Next request" in keys, keys
        assert not any(k.startswith("[ [") or k.startswith("] ]") for k in keys)
        title = str(screen.query_one("#context-title", Static).render())
        assert "1 messages" not in title and "1 elision stubs" not in title
        # Every character of the context is on the screen's rows, in order: folded, not cut.
        rows = [body.row(y) for y in range(body.virtual_size.height)]
        assert all(cell_len(r) <= body.text_width for r in rows)
        assert "".join(rows) == "".join(ln.expandtabs(8) for ln in screen.text.split("\n")).replace(
            "\x1b", "\u241b"
        )


def test_fold_starts_never_split_a_wide_character() -> None:
    line = "日本語のテキスト" * 5 + "abc"
    for width in range(2, 30):
        starts = fold_starts(line, width)
        parts = [line[a:b] for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]
        assert "".join(parts) == line and all(cell_len(p) <= width for p in parts)


async def test_an_error_is_told_once(tmp_path: Path) -> None:
    filled = await fill(tmp_path)
    async with CtxviewApp(filled.store, session=filled.session_id, watch=False).run_test(
        size=(100, 30)
    ) as pilot:
        await ready(pilot)
        pilot.app.screen.jump_to(0xBEEF)
        await pilot.pause()
        status = str(pilot.app.screen.query_one("#status", Static).render())
        assert "There is no result #beef" in status
        assert not [n for n in pilot.app._notifications if "#beef" in n.message]
        assert view_of(pilot) is not None


def test_a_truncated_jsonl_line_is_one_clear_sentence(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "cut.jsonl"
    whole = ('{"type": "user", "sessionId": "cut-1", "uuid": "u1", "timestamp": '
             '"2026-11-30T10:00:00Z", "cwd": "/tmp", "message": {"role": "user", '
             '"content": "hello"}}\n')  # fmt: skip
    path.write_text(whole + whole.replace('"u1"', '"u2"')[:70] + "\n" + whole.replace("u1", "u3"))
    ctxview = str(Path(sys.executable).with_name("ctxview"))
    done = subprocess.run([ctxview, "--store", str(tmp_path / "s.db"), "import", str(path)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    said = done.stdout + done.stderr
    assert "Invalid control character" not in said
    assert "cut short" in said, said
