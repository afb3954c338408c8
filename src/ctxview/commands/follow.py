"""`ctxview follow [PATH] [--no-view] [--theme NAME]`: import a transcript as it is written (the
newest Claude Code or Codex session when no path is given) and watch it in the viewer, which
opens on the followed session; quitting the viewer stops following. With --no-view it only
writes, until Ctrl-C, one line on stderr per batch imported."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from ctxview.commands.common import store_path
from ctxview.commands.errors import CliError
from ctxview.importers.detect import NotTranscript
from ctxview.importers.find import newest
from ctxview.importers.follow import follow
from ctxview.importers.runner import FileReport, check_file
from ctxview.store import Writer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", metavar="PATH",
                        help="the session file (default: the newest of any agent's on this machine)")  # fmt: skip
    parser.add_argument("--no-view", action="store_true",
                        help="only import, no viewer: one line on stderr per batch, until Ctrl-C")  # fmt: skip
    parser.add_argument("--theme", help="the viewer's theme (ctxview-dark, ctxview-light, ...)")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def batch_line(report: FileReport) -> str:
    """One batch imported, in a sentence: '+1 line (80 bytes) → cc-…'."""
    if report.refused:
        return f"Passed over {report.path}: {report.refused}"
    parts = [
        f"+{_plural(report.lines, 'line')} ({_plural(report.bytes, 'byte')}) → {report.session}"
    ]
    if report.replaced:
        parts.append("the file was truncated or replaced: read again from its start")
    if report.problems:
        parts.append(f"{_plural(len(report.problems), 'record')} skipped: "
                     + "; ".join(str(p) for p in report.problems[:3]))  # fmt: skip
    return "; ".join(parts)


def _say(report: FileReport) -> None:
    print(batch_line(report), file=sys.stderr, flush=True)


async def _run(args: argparse.Namespace) -> int:
    path = Path(args.path).expanduser() if args.path else newest()
    if path is None:
        raise CliError(
            "No agent's session was found where Claude Code, Codex, Gemini CLI, pi, "
            "Copilot CLI, Cursor or OpenCode keep them; give the session file's path."
        )
    if not path.is_file():
        raise CliError(f"There is no file {path}.")
    if args.theme:
        from ctxview import themes

        if args.theme not in themes.THEMES and args.theme not in themes.textual_theme_names():
            raise CliError(themes.unknown_theme_message(args.theme))
    if not args.no_view:
        return await _view(args, path)
    print(f"Following {path} (Ctrl-C stops).", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    writer = await Writer.open(store_path(args))
    try:
        await follow(writer, path, on_batch=_say, stop=stop)
    except NotTranscript as exc:
        raise CliError(str(exc)) from None
    finally:
        await writer.close()
    return 0


async def _view(args: argparse.Namespace, path: Path) -> int:
    """Follow in a task while the viewer runs in this process; it opens on the followed session
    as soon as its first records are in, and quitting it stops the follow (the writer closes,
    so the session stops being live)."""
    from ctxview.viewer.app import CtxviewApp
    from ctxview.viewer.messages import OpenSession

    store = store_path(args)
    writer = await Writer.open(store)  # makes the store, so the viewer has one to open
    try:  # a file follow would refuse: said before the viewer opens, not from inside it
        await check_file(writer, path)
    except NotTranscript as exc:
        await writer.close()
        raise CliError(str(exc)) from None
    app = CtxviewApp(store, theme=args.theme)
    stop = asyncio.Event()
    main = str(path.expanduser().resolve())
    found: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    failed: list[BaseException] = []

    def on_batch(report: FileReport) -> None:
        if report.session and report.path == main and not found.done():
            found.set_result(report.session)
        # Never printed inside the app: stdout is its screen.
        if report.problems or report.replaced or report.refused:
            app.notify(batch_line(report), severity="warning", timeout=8, markup=False)

    async def run_follow() -> None:
        try:
            await follow(writer, path, on_batch=on_batch, stop=stop)
        except Exception as exc:  # a file that is not a transcript: say it after the app closes
            failed.append(exc)
            app.exit()

    async def open_it() -> None:
        while not (app.is_running and app.screen_stack):
            await asyncio.sleep(0.02)
        try:  # a file imported before and not written since reports nothing: look it up
            session = await asyncio.wait_for(asyncio.shield(found), 1.5)
        except TimeoutError:
            known = [s for s in await app.reader.sessions() if s.source_path == main]
            session = known[0].id if known else await found
        app.post_message(OpenSession(session))

    tasks = [asyncio.create_task(run_follow(), name="ctxview-follow"),
             asyncio.create_task(open_it(), name="ctxview-follow-open")]  # fmt: skip
    try:
        await app.run_async()
    finally:
        stop.set()
        tasks[1].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await writer.close()
    if failed:
        error = failed[0]
        if isinstance(error, NotTranscript):
            raise CliError(str(error))
        raise error
    print(f"Stopped following {path}; the store is {store}.", file=sys.stderr)
    return 0
