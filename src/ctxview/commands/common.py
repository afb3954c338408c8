"""What several sub-commands share: the store path, the session argument, ids."""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxview.commands.errors import CliError
from ctxview.rules.ids import parse_id
from ctxview.store import Reader, default_store_path
from ctxview.store.records import SessionRow


def store_path(args: argparse.Namespace) -> Path:
    given = getattr(args, "store", None)
    return Path(given).expanduser() if given else default_store_path()


def add_session_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", help="session id or unique prefix (default: the newest)")


async def open_reader(args: argparse.Namespace) -> Reader:
    return await Reader.open(store_path(args))


async def pick_session(reader: Reader, args: argparse.Namespace) -> SessionRow:
    return await reader.resolve_session(getattr(args, "session", None))


def result_id(text: str) -> int:
    rid = parse_id(text)
    if rid is None:
        raise CliError(f"{text!r} is not a result id (hex digits, with or without #).")
    return rid
