"""`ctxview pull --from URL [--watch] [--machine NAME] [--session ID] [--since WHEN]`: a team's
sessions from PostgreSQL into the local store, a replica (src/ctxview/sync/pull.py)."""

from __future__ import annotations

import argparse
import asyncio

from ctxview.commands import sync_options
from ctxview.commands.common import store_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sync_options.add_arguments(parser, "--from", "CTXVIEW_PULL_URL", "postgresql://user@host/db",
                       "keep pulling as pushes arrive")  # fmt: skip
    parser.add_argument("--machine", help="only this machine's sessions")
    parser.add_argument("--session", help="only this session id")


def run(args: argparse.Namespace) -> int:
    from ctxview.sync.pull import pull

    url, since = sync_options.url_and_since(args, "pull", "--from")
    return asyncio.run(pull(store_path(args), url, machine=args.machine, session=args.session,
                            since=since, watch=args.watch, quiet=args.quiet))  # fmt: skip
