"""`ctxview export [SESSION] [--format html|md|json] [-o PATH] [--all] [--no-redact]`: a
session to share, as one HTML file, Markdown or JSON Lines, with secrets redacted.

SESSION may also be a transcript file (`ctxview export FILE.jsonl`): it and its sub-agents'
files are imported into a throwaway store, exported and the store removed, in one process (an
import and an export command would each pay Python's start-up and the store's creation)."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import threading
import time
from pathlib import Path

from ctxview.commands.common import store_path
from ctxview.commands.errors import CliError
from ctxview.export.fit import GITHUB
from ctxview.export.redact import Redactor
from ctxview.export.run import DEFAULT_PAGE_MB, default_output, export_all, export_session
from ctxview.export.source import Source
from ctxview.export.tally import kinds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="?", help="session id or unique prefix "
                        "(default: the newest), or a transcript file (.jsonl) to export "
                        "straight from, without a store")  # fmt: skip
    parser.add_argument("--format", choices=("html", "md", "json"),
                        help="html (default): one self-contained page; md: Markdown for GitHub; "
                        "json: JSON Lines that `ctxview import` reads back")  # fmt: skip
    parser.add_argument("--fit", choices=("github",),
                        help="github: a Markdown summary that fits in a GitHub issue or pull "
                        "request comment (65,536 characters): the prompts, boundaries, files "
                        "changed with their diffs, results by their first lines")  # fmt: skip
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="the file to write (default: SESSION.html/.md/.jsonl here); with "
                        "--all a folder (default: ctxview-export)")  # fmt: skip
    parser.add_argument("--all", action="store_true",
                        help="every session of the store and an index of them")  # fmt: skip
    parser.add_argument("--no-redact", action="store_true",
                        help="keep secrets (API keys, tokens, passwords) as they are")  # fmt: skip
    parser.add_argument("--page-mb", type=float, default=DEFAULT_PAGE_MB, metavar="MB",
                        help=f"HTML: split a session into pages of about this size "
                        f"(default {DEFAULT_PAGE_MB:g}; 0: never split)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if args.all and args.session:
        raise CliError("Give a session or --all, not both.")
    if args.fit and args.format not in (None, "md"):
        raise CliError("--fit writes Markdown: give --format md, or no --format.")
    args.format = args.format or ("md" if args.fit else "html")
    if args.page_mb < 0:
        raise CliError("--page-mb takes a size in MB of 0 or more.")
    page_bytes = int(args.page_mb * 1e6) if args.page_mb else None
    transcript = _transcript(args.session)
    if transcript is None:
        return _export(args, store_path(args), args.session, page_bytes)
    if args.all:
        raise CliError("Give a transcript file or --all, not both.")
    with tempfile.TemporaryDirectory(prefix="ctxview-export-") as tmp:
        store = Path(tmp) / "store.db"
        return _export(args, store, _import(transcript, store), page_bytes)


def _transcript(session: str | None) -> Path | None:
    """The transcript file SESSION names, if it names one (a session id is not a path)."""
    if not session or not (session.endswith(".jsonl") or "/" in session):
        return None
    path = Path(session).expanduser()
    if not path.is_file():
        raise CliError(f"There is no transcript file {path}.")
    return path


def sub_agent_files(path: Path) -> list[Path]:
    """A Claude Code session's sub-agent transcripts: `<session>/subagents/agent-*.jsonl`
    (2.1.x), or `agent-*.jsonl` beside it whose records name the session (2.0.x). (Inline
    sidechains, 1.0.x, are in the session's own file.)"""
    from ctxview.importers.follow import sub_agents

    found = sub_agents(path)
    for f in sorted(path.parent.glob("agent-*.jsonl")):
        if f != path and _session_of(f) == path.stem:
            found.append(f)
    return found


def _session_of(path: Path) -> str | None:
    """The `sessionId` a transcript's first record names (a line at most 1 MB is read)."""
    import json

    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 20)
        value = json.loads(first).get("sessionId")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _import(path: Path, store: Path) -> str:
    """`path`, and its sub-agents' files, into a new store at `store`; the id of its session."""
    import asyncio
    import sys

    from ctxview.importers.detect import NotTranscript
    from ctxview.importers.runner import FileImporter
    from ctxview.store import Writer

    async def run() -> str | None:
        # The search index is left out: nothing searches a store that lives for one export.
        writer = await Writer.open(store, fts_max_chars=0)
        skipped = 0
        try:
            async with writer.batch():
                report = await FileImporter(writer, path).step()
                skipped += len(report.problems)
                if report.session is not None:
                    # After their session, so each is linked to the call that started it.
                    for agent in sub_agent_files(path):
                        with contextlib.suppress(NotTranscript):
                            skipped += len((await FileImporter(writer, agent).step()).problems)
        finally:
            await writer.close()
        if skipped:
            print(f"ctxview: skipped {skipped:,} records of {path.name} and its sub-agents that "
                  "could not be imported (`ctxview import` lists them).", file=sys.stderr)  # fmt: skip
        return report.session

    try:
        session = asyncio.run(run())
    except NotTranscript as exc:
        raise CliError(str(exc)) from None
    if session is None:
        raise CliError(f"{path} holds no session to export.")
    return session


def _export(args: argparse.Namespace, store: Path, session: str | None,
            page_bytes: int | None) -> int:  # fmt: skip
    redactor = Redactor(enabled=not args.no_redact)
    source = Source(store, redactor)
    t0 = time.perf_counter()
    try:
        if args.all:
            out = Path(args.output or "ctxview-export").expanduser()
            if out.exists() and not out.is_dir():
                raise CliError(f"{out} is a file; --all writes a folder.")
            result = export_all(source, args.format, out, page_bytes, _fit(args))
            where = f"{out}/ ({result.sessions} sessions, index {result.files[0].name})"
        else:
            row = source.resolve(session)
            out = Path(args.output).expanduser() if args.output else default_output(
                row.id, args.format)  # fmt: skip
            if out.is_dir():
                out = out / default_output(row.id, args.format)
            if not out.parent.is_dir():
                raise CliError(f"There is no folder {out.parent} to write {out.name} in.")
            result = export_session(source, row.id, args.format, out, page_bytes, _workers(),
                                    _fit(args))  # fmt: skip
            where = str(result.files[0].resolve())
            if result.pages > 1:
                where += f" (an index and {result.pages} pages)"
    finally:
        source.close()
    size = sum(result.sizes) / 1e6
    held = "not redacted (--no-redact)"
    if result.held.redacted:
        who = "the files written hold" if len(result.files) > 1 else "it holds"
        held = f"{who} {kinds(result.held.counts)}"
    print(f"Wrote {where}, {size:.1f} MB in {time.perf_counter() - t0:.1f} s; {held}.")
    if args.format == "md" and not args.fit and not args.all and result.chars >= GITHUB:
        import sys

        print(f"ctxview: {out.name} is {result.chars:,} characters, past the {GITHUB:,} GitHub "
              "takes in an issue or pull request comment; `--fit github` writes a summary that "
              "fits.", file=sys.stderr)  # fmt: skip
    return 0


def _fit(args: argparse.Namespace) -> int | None:
    return GITHUB if args.fit == "github" else None


def _workers() -> int:
    """Two processes for a long HTML export on a machine with two cores or more (a command is
    a process of its own, so it may fork); CTXVIEW_EXPORT_WORKERS=1 keeps it to one."""
    if threading.active_count() > 1:  # forking a process with threads (a test's) is unsafe
        return 1
    try:
        wanted = int(os.environ.get("CTXVIEW_EXPORT_WORKERS", "2"))
    except ValueError:
        wanted = 2
    return max(1, min(wanted, 2, os.cpu_count() or 1))
