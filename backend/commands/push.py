"""`ctxview push --to URL [--watch] [--session ID ...] [--since WHEN]`: the local store's
sessions into a team's PostgreSQL database (backend/sync/push.py)."""

from __future__ import annotations

import argparse
import asyncio
import os

from ..sync import parse_since
from .common import store_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--to", metavar="URL", default=os.environ.get("CTXVIEW_PUSH_URL"),
                        help="postgresql://user@host/db (libpq: PGHOST, PGPASSWORD, .pgpass "
                        "fill what it leaves out; $CTXVIEW_PUSH_URL)")  # fmt: skip
    parser.add_argument("--session", action="append", help="only this session (repeatable)")
    parser.add_argument("--since", metavar="WHEN", help="sessions started since (2h, 2026-12-01)")
    parser.add_argument("--watch", action="store_true", help="keep pushing each commit")
    parser.add_argument("--quiet", action="store_true", help="no summary line")


def run(args: argparse.Namespace) -> int:
    from ..cli import CliError
    from ..sync.push import push

    if not args.to:
        raise CliError("push needs --to postgresql://user@host/dbname.")
    since = parse_since(args.since)
    return asyncio.run(push(store_path(args), args.to, sessions=args.session, since=since,
                            watch=args.watch, quiet=args.quiet))  # fmt: skip
