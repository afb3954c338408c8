"""`ctxview import PATH...`: Claude Code's and Codex's transcripts, and the session files of
Gemini CLI, OpenCode, pi, Copilot CLI, Cursor and aider, into the store, through the rules.

Files, folders (every `*.jsonl` under them, e.g. `~/.claude/projects`, `~/.codex/sessions`, and
the other agents' files: `importers/find.py`).
A second import of the same files adds only what was appended since."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

from ctxview.commands.common import store_path
from ctxview.commands.errors import CliError
from ctxview.importers.detect import NotTranscript, detect
from ctxview.importers.find import transcripts
from ctxview.importers.progress import ProgressBar
from ctxview.importers.runner import FileImporter, HookedElsewhere, Problem
from ctxview.store import Writer

_SHOW_PROBLEMS = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="transcript files or folders (e.g. ~/.claude/projects, "
                             "~/.pi/agent/sessions, ~/.local/share/opencode)")  # fmt: skip
    parser.add_argument("--progress", action="store_true",
                        help="show the progress bar even when stderr is not a terminal")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    given, found = transcripts(Path(p) for p in args.paths)
    for p in given:
        if not p.is_file():
            raise CliError(f"There is no file or folder {p}.")
    files = given + found
    if not files:
        raise CliError(
            "No transcripts (*.jsonl, or another agent's session files) were found "
            "under the paths given."
        )
    sizes = {f: f.stat().st_size for f in files}
    bar = ProgressBar(len(files), sum(sizes.values()),
                      enabled=args.progress or sys.stderr.isatty())  # fmt: skip
    explicit = set(given)
    problems: list[Problem] = []
    quiet: dict[str, int] = {}  # known record kinds with nothing to import -> how many
    refused: list[str] = []
    imported = unchanged = lines = neither = 0
    sessions: set[str] = set()

    def refuse(f: Path, exc: NotTranscript) -> None:
        nonlocal neither
        if f in explicit or isinstance(exc, HookedElsewhere):
            refused.append(str(exc))  # a copy of a hooked session's: said too
        else:
            neither += 1  # a folder may hold other JSON lines: not an error

    # The files of neither format are told apart first: when no file has anything to import,
    # no store is made (`import /etc/passwd` left an empty store behind).
    todo: list[Path] = []
    for f in files:
        try:
            if detect(f) is None:
                unchanged += 1  # empty so far: nothing to import yet
                bar.file_done(sizes[f])
                continue
        except NotTranscript as exc:
            refuse(f, exc)
            bar.file_done(sizes[f])
            continue
        todo.append(f)
    writer = await Writer.open(store_path(args)) if todo else None
    try:
        async with writer.batch() if writer is not None else contextlib.nullcontext():
            for f in todo:
                assert writer is not None
                before = bar.done_bytes
                try:
                    report = await FileImporter(writer, f).step(progress=bar)
                except NotTranscript as exc:
                    refuse(f, exc)
                    bar.file_done(sizes[f] - (bar.done_bytes - before))
                    continue
                bar.file_done(max(0, sizes[f] - (bar.done_bytes - before)))
                problems.extend(report.problems)
                for kind, count in report.quiet.items():
                    quiet[kind] = quiet.get(kind, 0) + count
                if report.lines:
                    imported += 1
                    lines += report.lines
                    # Each session it filled, sub-agents' included ("1 session" was said for 6).
                    sessions |= report.sessions or ({report.session} if report.session else set())
                else:
                    unchanged += 1
    finally:
        bar.close()
        if writer is not None:
            await writer.close()
    if sessions or not refused:
        print(f"Imported {_n(lines, 'new line')} from {_n(imported, 'file')} into "
              f"{_n(len(sessions), 'session')}; {_n(unchanged, 'file')} had nothing new"
              + (f"; {_n(neither, 'file')} of neither format left alone." if neither else "."))  # fmt: skip
    if quiet:
        kinds = sorted(quiet.items(), key=lambda kv: (-kv[1], kv[0]))
        print(
            f"Left aside {_n(sum(quiet.values()), 'record')} of known kinds with nothing to "
            "import (" + ", ".join(f"{k} {n:,}" for k, n in kinds) + ")."
        )
    if problems:
        print(f"Skipped {_n(len(problems), 'record')} that could not be imported:", file=sys.stderr)
        for problem in problems[:_SHOW_PROBLEMS]:
            print(f"  {problem}", file=sys.stderr)
        if len(problems) > _SHOW_PROBLEMS:
            print(f"  … and {len(problems) - _SHOW_PROBLEMS} more.", file=sys.stderr)
    for sentence in refused:
        print(f"ctxview: {sentence}", file=sys.stderr)
    return 1 if refused else 0


def _n(count: int, word: str) -> str:
    """`1 file`, `3 files`."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"
