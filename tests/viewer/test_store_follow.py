"""The viewer notices that its store's file was replaced, renamed over or deleted: it says so and
follows the new file (real files, real renames, the real app under Textual's Pilot)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from textual.pilot import Pilot

from ctxview.store import Writer
from ctxview.store.connect import identity
from ctxview.store.records import Event
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.sessions import SessionsScreen, SessionTable
from ctxview.viewer.screens.transcript import TranscriptScreen


async def make_store(path: Path, session: str, title: str, texts: list[str]) -> None:
    async with await Writer.open(path) as writer:
        await writer.create_session(session, title=title, next_rid=0x1000, started=1_000.0)
        await writer.append(session, [Event(ts=1.0, kind="message", role="user", text=t)
                                      for t in texts])  # fmt: skip


async def until(pilot: Pilot, check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {check}"
        await pilot.pause(0.05)


def notices(app: CtxviewApp) -> list[str]:
    return [n.message for n in app._notifications]


def shows(app: CtxviewApp, word: str, instead_of: object = None) -> bool:
    """A transcript screen (not `instead_of`) whose title has `word`, and no follow under way:
    the old screen's title reads the new store too, before it is popped."""
    screen = app.screen
    return (isinstance(screen, TranscriptScreen) and screen is not instead_of
            and word in screen.title_text and not app._following)  # fmt: skip


def listed(app: CtxviewApp) -> list[str]:
    screen = app.screen
    return list(screen.session_ids) if isinstance(screen, SessionsScreen) else []


async def test_renamed_over_then_deleted_then_made_again(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await make_store(store, "alpha", "first store", ["hello"])
    other = tmp_path / "other.db"
    await make_store(other, "beta", "second store", ["hi"])
    app = CtxviewApp(store)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: listed(app) == ["alpha"])
        first = app.reader

        # Renamed over: `mv other.db store.db`.
        os.replace(other, store)
        await until(pilot, lambda: listed(app) == ["beta"])
        assert app.reader is not first and app.reader.identity == identity(store)
        replaced = f"The store {store} was replaced; the view now shows the new file."
        await until(pilot, lambda: replaced in notices(app))

        # Deleted: said once; what was read stays.
        for name in ("store.db", "store.db-wal", "store.db-shm"):
            (tmp_path / name).unlink(missing_ok=True)
        gone = (f"The store {store} was deleted or moved away; a new store there will be "
                f"opened when one appears.")  # fmt: skip
        await until(pilot, lambda: gone in notices(app))
        assert listed(app) == ["beta"]
        await pilot.pause(1.5)  # more looks: nothing more to say
        assert notices(app).count(gone) == 1

        # A new store made at the path (a writer makes it empty first): followed.
        await make_store(store, "gamma", "third store", ["hey"])
        await until(pilot, lambda: listed(app) == ["gamma"])
        assert not any("cannot read" in n for n in notices(app))

        # And it still follows commits to the new file.
        async with await Writer.open(store) as writer:
            await writer.create_session("delta", title="fourth", next_rid=0x1000, started=2_000.0)
        await until(pilot, lambda: listed(app) == ["delta", "gamma"])


async def test_a_replaced_store_reopens_the_session_shown(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await make_store(store, "s", "before", ["old text"])
    new = tmp_path / "new.db"
    await make_store(new, "s", "after", ["new text", "more new text"])
    app = CtxviewApp(store, session="s")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: shows(app, "before"))
        old = app.screen
        os.replace(new, store)
        await until(pilot, lambda: shows(app, "after", instead_of=old))
        assert len(app.screen_stack) == 2


async def test_a_file_that_is_not_a_store_is_told_once(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await make_store(store, "alpha", "first store", ["hello"])
    app = CtxviewApp(store)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: listed(app) == ["alpha"])
        junk = tmp_path / "junk"
        junk.write_bytes(b"not a database at all, just some text\n" * 200)
        os.replace(junk, store)
        said = (f"The store {store} was replaced by a file ctxview cannot read: {store} is not "
                f"an SQLite database, so it is not a ctxview store.")  # fmt: skip
        await until(pilot, lambda: said in notices(app))
        await pilot.pause(1.5)
        assert notices(app).count(said) == 1
        assert listed(app) == ["alpha"], "what was read stays on screen"


async def test_the_folder_removed_and_made_again_with_other_sessions(tmp_path: Path) -> None:
    """The watch of a removed folder ends; the poll still looks, and the new folder is watched."""
    import shutil

    folder = tmp_path / "state"
    folder.mkdir()
    store = folder / "store.db"
    await make_store(store, "s", "before", ["old text"])
    app = CtxviewApp(store, session="s")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TranscriptScreen)
                    and "before" in app.screen.title_text)  # fmt: skip
        shutil.rmtree(folder)
        await until(pilot, lambda: any("deleted or moved away" in n for n in notices(app)))
        folder.mkdir()
        await make_store(store, "t", "elsewhere", ["other text"])
        # The session shown is not in the new file: the list of what is.
        await until(pilot, lambda: listed(app) == ["t"])
        assert len(app.screen_stack) == 2
        async with await Writer.open(store) as writer:
            await writer.create_session("u", title="later", next_rid=0x1000, started=3_000.0)
        await until(pilot, lambda: listed(app) == ["u", "t"])


async def test_a_list_reloaded_while_its_screen_is_removed_does_not_stop_the_app(
    tmp_path: Path,
) -> None:
    """The list's reload lands after its screen lost its table (a store replaced pops the
    screens while a reload is under way): it used to raise NoMatches in the worker, and the
    app stopped (test_renamed_over_then_deleted_then_made_again, 3 runs in 12 under load)."""
    store = tmp_path / "store.db"
    await make_store(store, "alpha", "first store", ["hello"])
    app = CtxviewApp(store)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: listed(app) == ["alpha"])
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await screen.query_one(SessionTable).remove()
        screen.reload()
        await until(pilot, lambda: not screen._reloading)
        await pilot.pause()
        assert app.is_running and app.return_code is None


async def test_a_replaced_store_stops_the_work_of_the_screens_it_removes(tmp_path: Path) -> None:
    """A screen's worker that keeps touching its children (as the status line's update does)
    must not find them gone while the screen is removed: the screens' work is cancelled first.
    It raised NoMatches for '#status' and stopped the app (test_a_replaced_store_reopens_the_
    session_shown, 1 run in a CI)."""
    import asyncio

    store = tmp_path / "store.db"
    await make_store(store, "s", "before", ["old text"])
    new = tmp_path / "new.db"
    await make_store(new, "s", "after", ["new text"])
    app = CtxviewApp(store, session="s")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: shows(app, "before"))
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)

        async def busy() -> None:
            n = 0
            while True:
                n += 1
                screen.update_status(str(n))
                await asyncio.sleep(0)

        screen.run_worker(busy(), group="busy")
        os.replace(new, store)
        await until(pilot, lambda: shows(app, "after", instead_of=screen))
        await pilot.pause()
        assert app.is_running and app.return_code is None
