"""The command palette finds ids, paths and tools of the open session, and sessions on the
list; each hit posts the message that takes the app there."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.message import Message
from viewer_helpers import palette_search, wait_for

from ctxview.demo.run import run_demo
from ctxview.store import Reader
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.command_palette import describe_args
from ctxview.viewer.messages import Jump, OpenResult, OpenSession


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    import asyncio

    path = tmp_path_factory.mktemp("palette") / "store.db"
    run = asyncio.run(run_demo(path, pace=0, workspace_root=path.parent))
    return path, run.session_id


async def newest(store: Path, session: str, column: str, value: str) -> int:
    async with await Reader.open(store) as reader:
        rids = [e.rid for e in await reader.events(session) if e.kind == "result"
                and getattr(e, column) == value]  # fmt: skip
    return max(r for r in rids if r is not None)


async def pick(app: CtxviewApp, pilot, query: str, want) -> list[str]:  # type: ignore[no-untyped-def]
    """Open the palette, type `query`, wait for the hits `want` accepts, return them, then choose
    the first and wait for the palette to close."""
    await wait_for(pilot, lambda: app.screen.query("*"))  # the first screen is up
    await pilot.press("ctrl+p")
    shown = await palette_search(pilot, query, want)
    await pilot.press("enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))
    await pilot.pause()
    return shown


def recorder() -> tuple[list[Message], object]:
    seen: list[Message] = []

    def hook(message: Message) -> None:
        if isinstance(message, Jump | OpenResult | OpenSession):
            seen.append(message)

    return seen, hook


@pytest.mark.parametrize("typed", ["#1005", "1005"])
async def test_an_id_jumps_there(demo_store: tuple[Path, str], typed: str) -> None:
    store, session = demo_store
    seen, hook = recorder()
    app = CtxviewApp(store, session=session, watch=False)
    async with app.run_test(size=(120, 30), message_hook=hook) as pilot:  # type: ignore[arg-type]
        shown = await pick(app, pilot, typed, lambda hits: hits and "Jump to #1005" in hits[0])
        assert "Jump to #1005" in shown[0] and "bash" in shown[0]
        assert any("Open #1005 in full" in s for s in shown)
        await wait_for(pilot, lambda: any(isinstance(m, Jump) for m in seen))
    jumps = [m for m in seen if isinstance(m, Jump)]
    assert [(j.session_id, j.rid) for j in jumps] == [(session, 0x1005)]


@pytest.mark.parametrize(
    ("typed", "column", "value"),
    [("pricing.py", "path", "shop/pricing.py"), ("apply_patch", "tool", "apply_patch")],
)
async def test_a_path_or_tool_jumps_to_its_newest_result(
    demo_store: tuple[Path, str], typed: str, column: str, value: str
) -> None:
    store, session = demo_store
    seen, hook = recorder()
    app = CtxviewApp(store, session=session, watch=False)
    async with app.run_test(size=(120, 30), message_hook=hook) as pilot:  # type: ignore[arg-type]
        shown = await pick(app, pilot, typed, lambda hits: hits and value in hits[0])
        assert shown and value in shown[0]
        await wait_for(pilot, lambda: any(isinstance(m, Jump) for m in seen))
    expected = await newest(store, session, column, value)
    assert [m.rid for m in seen if isinstance(m, Jump)] == [expected]


async def test_words_of_a_call_find_it(demo_store: tuple[Path, str]) -> None:
    store, session = demo_store
    app = CtxviewApp(store, session=session, watch=False)
    async with app.run_test(size=(120, 30)) as pilot:
        shown = await pick(app, pilot, "run_tests -v", lambda hits: hits)
        assert any("python3 -B run_tests.py -v" in s and "#1005" in s for s in shown)


async def test_on_the_session_list_it_finds_sessions(demo_store: tuple[Path, str]) -> None:
    store, session = demo_store
    seen, hook = recorder()
    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(120, 30), message_hook=hook) as pilot:  # type: ignore[arg-type]
        shown = await pick(app, pilot, "discount code", lambda hits: hits)
        assert "Fix: cart total wrong with a discount code" in shown[0]
        await wait_for(pilot, lambda: any(isinstance(m, OpenSession) for m in seen))
    assert [m.session_id for m in seen if isinstance(m, OpenSession)] == [session]


def test_describe_args() -> None:
    assert describe_args("bash", '{"command": "make  test"}') == "make test"
    assert describe_args("read", '{"path": "a.py", "offset": 3}') == "a.py"
    assert describe_args("x", '{"n": 1}') == '{"n": 1}'
    assert describe_args("x", "not json") == ""
    assert describe_args("bash", '{"command": "' + "y" * 100 + '"}', width=10) == "y" * 9 + "…"


async def test_question_mark_shows_the_keys_and_closes(demo_store: tuple[Path, str]) -> None:
    from textual.widgets import Static

    from ctxview.viewer.screens.help import KEYS, HelpScreen

    store, _ = demo_store
    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.query("*"))
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one("#help-keys", Static)
        await wait_for(pilot, lambda: table.size.height >= sum(len(rows) for _, rows in KEYS))
        # Keys of the screen below that the fixed list lacks are listed too (not scrolling).
        others = app.screen._others()
        assert ("r", "reload") in others
        assert not any(what in ("up", "down", "page up") for _, what in others)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
