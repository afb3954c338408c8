"""`ctxview push --to URL [--watch] [--session ID ...] [--since WHEN]`: the local store's
sessions into a team's PostgreSQL database (src/ctxview/sync/push.py)."""

from __future__ import annotations

import argparse
import asyncio

from ctxview.commands import sync_options
from ctxview.commands.common import store_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sync_options.add_arguments(parser, "--to", "CTXVIEW_PUSH_URL", "postgresql://user@host/db (libpq: "
                       "PGHOST, PGPASSWORD, .pgpass fill what it leaves out)",
                       "keep pushing each commit")  # fmt: skip
    parser.add_argument("--session", action="append", help="only this session (repeatable)")


def run(args: argparse.Namespace) -> int:
    from ctxview.sync.push import push

    url, since = sync_options.url_and_since(args, "push", "--to")
    return asyncio.run(push(store_path(args), url, sessions=args.session, since=since,
                            watch=args.watch, quiet=args.quiet))  # fmt: skip
