"""`ctxview pull --from URL [--watch] [--machine NAME] [--session ID] [--since WHEN]`: a team's
sessions from PostgreSQL into the local store, a replica (backend/sync/pull.py)."""

from __future__ import annotations

import argparse
import asyncio
import os

from ..sync import parse_since
from .common import store_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="url", metavar="URL",
                        default=os.environ.get("CTXVIEW_PULL_URL"),
                        help="postgresql://user@host/db ($CTXVIEW_PULL_URL)")  # fmt: skip
    parser.add_argument("--machine", help="only this machine's sessions")
    parser.add_argument("--session", help="only this session id")
    parser.add_argument("--since", metavar="WHEN", help="sessions started since (2h, 2026-12-01)")
    parser.add_argument("--watch", action="store_true", help="keep pulling as pushes arrive")
    parser.add_argument("--quiet", action="store_true", help="no summary line")


def run(args: argparse.Namespace) -> int:
    from ..cli import CliError
    from ..sync.pull import pull

    if not args.url:
        raise CliError("pull needs --from postgresql://user@host/dbname.")
    since = parse_since(args.since)
    return asyncio.run(pull(store_path(args), args.url, machine=args.machine,
                            session=args.session, since=since, watch=args.watch,
                            quiet=args.quiet))  # fmt: skip
