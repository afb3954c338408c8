"""`ctxview follow [PATH]`: import a transcript as it is written (the newest Claude Code or Codex
session when no path is given), until Ctrl-C. One line on stderr per batch imported."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from ..importers.detect import NotTranscript
from ..importers.find import newest
from ..importers.follow import follow
from ..importers.runner import FileReport
from ..store import Writer
from .common import store_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", metavar="PATH",
                        help="the transcript (default: the newest session on this machine)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


def _say(report: FileReport) -> None:
    parts = [f"+{report.lines} lines ({report.bytes} bytes) → {report.session}"]
    if report.replaced:
        parts.append("the file was truncated or replaced: read again from its start")
    if report.problems:
        parts.append(f"{len(report.problems)} records skipped: "
                     + "; ".join(str(p) for p in report.problems[:3]))  # fmt: skip
    print("; ".join(parts), file=sys.stderr, flush=True)


async def _run(args: argparse.Namespace) -> int:
    from ..cli import CliError

    path = Path(args.path).expanduser() if args.path else newest()
    if path is None:
        raise CliError("No Claude Code or Codex session was found; give the transcript's path.")
    if not path.is_file():
        raise CliError(f"There is no file {path}.")
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
