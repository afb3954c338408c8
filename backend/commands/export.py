"""`ctxview export [SESSION] [--format html|md|json] [-o PATH] [--all] [--no-redact]`: a
session to share, as one HTML file, Markdown or JSON Lines, with secrets redacted."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..export.redact import Redactor
from ..export.run import DEFAULT_PAGE_MB, default_output, export_all, export_session
from ..export.source import Source
from .common import store_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="?", help="session id or unique prefix "
                        "(default: the newest)")  # fmt: skip
    parser.add_argument("--format", choices=("html", "md", "json"), default="html",
                        help="html (default): one self-contained page; md: Markdown for GitHub; "
                        "json: JSON Lines that `ctxview import` reads back")  # fmt: skip
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
    from ..cli import CliError

    if args.all and args.session:
        raise CliError("Give a session or --all, not both.")
    if args.page_mb < 0:
        raise CliError("--page-mb takes a size in MB of 0 or more.")
    page_bytes = int(args.page_mb * 1e6) if args.page_mb else None
    redactor = Redactor(enabled=not args.no_redact)
    source = Source(store_path(args), redactor)
    t0 = time.perf_counter()
    try:
        if args.all:
            out = Path(args.output or "ctxview-export").expanduser()
            if out.exists() and not out.is_dir():
                raise CliError(f"{out} is a file; --all writes a folder.")
            result = export_all(source, args.format, out, page_bytes)
            where = f"{out}/ ({result.sessions} sessions, index {result.files[0].name})"
        else:
            row = source.resolve(args.session)
            out = Path(args.output).expanduser() if args.output else default_output(
                row.id, args.format)  # fmt: skip
            if out.is_dir():
                out = out / default_output(row.id, args.format)
            if not out.parent.is_dir():
                raise CliError(f"There is no folder {out.parent} to write {out.name} in.")
            result = export_session(source, row.id, args.format, out, page_bytes)
            where = str(result.files[0].resolve())
            if result.pages > 1:
                where += f" (an index and {result.pages} pages)"
    finally:
        source.close()
    size = sum(result.sizes) / 1e6
    print(f"Wrote {where}, {size:.1f} MB in {time.perf_counter() - t0:.1f} s; "
          f"{redactor.summary()}.")  # fmt: skip
    return 0
