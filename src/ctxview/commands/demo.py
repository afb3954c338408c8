"""`ctxview demo [--store PATH] [--pace SECONDS] [--no-view] [--theme NAME]`: a scripted agent
session written live through the engine, watched in the viewer as it builds up."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

from ctxview.commands.common import store_path
from ctxview.commands.errors import CliError
from ctxview.demo.run import DEFAULT_PACE, DemoRun, open_demo, play, run_demo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pace", type=float, default=DEFAULT_PACE, metavar="SECONDS",
        help=f"pause between steps (default {DEFAULT_PACE}; 0: as fast as it can)",
    )  # fmt: skip
    parser.add_argument("--no-view", action="store_true",
                        help="only write the session; print the store path and session id")  # fmt: skip
    parser.add_argument("--theme", help="the viewer's theme (ctxview-dark, ctxview-light, ...)")


def _store(args: argparse.Namespace) -> Path:
    # The default store unless --store: the next plain `ctxview` finds the demo there.
    return store_path(args)


def _tidy(run: DemoRun) -> None:
    """The copy of the sample project the engine worked on goes (the store keeps every result):
    a demo leaves no temporary folder behind."""
    parent = run.workspace.parent
    if parent.name.startswith("ctxview-demo-"):
        shutil.rmtree(parent, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    if args.pace < 0:
        raise CliError("--pace must be 0 or more seconds.")
    if args.theme:
        from ctxview import themes

        if args.theme not in themes.THEMES and args.theme not in themes.textual_theme_names():
            raise CliError(themes.unknown_theme_message(args.theme))
    if args.no_view:
        return asyncio.run(_write_only(args))
    return asyncio.run(_view(args))


async def _write_only(args: argparse.Namespace) -> int:
    def tell(run: DemoRun) -> None:
        print(f"store: {run.store}\nsession: {run.session_id}", flush=True)

    run = await run_demo(_store(args), args.pace, on_open=tell)
    _tidy(run)
    return 0


HINT = (
    "A scripted agent session is being written through the engine; the view follows it. "
    "Click an id (or press g and type one), a stub, an elision line or a boundary; "
    "[ and ] step between boundaries; ? lists the keys; q quits."
)


async def _hint_then_play(app: object, run: DemoRun, pace: float) -> None:
    from textual.app import App

    assert isinstance(app, App)
    for _ in range(200):  # the app mounts within a moment; the story waits for it
        if app.is_running and app.screen_stack:
            break
        await asyncio.sleep(0.01)
    app.notify(HINT, title="ctxview demo", timeout=15, markup=False)
    await play(run, pace)


async def _view(args: argparse.Namespace) -> int:
    from ctxview.viewer.app import CtxviewApp

    run = await open_demo(_store(args))
    app = CtxviewApp(run.store, session=run.session_id, theme=args.theme)
    task = asyncio.create_task(_hint_then_play(app, run, args.pace), name="ctxview-demo")

    def finished(t: asyncio.Task[None]) -> None:
        if not t.cancelled() and t.exception() is not None:
            # Never print inside the app (stdout is the screen, or textual-serve's wire).
            app.notify(f"The demo stopped: {t.exception()}", severity="error", timeout=30,
                       markup=False)  # fmt: skip

    task.add_done_callback(finished)
    try:
        await app.run_async()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await run.close()
        _tidy(run)
    again = "ctxview" if getattr(args, "store", None) is None else f"ctxview --store {run.store}"
    print(f"The demo is in the store {run.store}; open it again with: {again}", file=sys.stderr)
    return 0
