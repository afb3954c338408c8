"""`ctxview recall ID [--offset N --limit N]`: a stored result in full, as recall shows it."""

from __future__ import annotations

import argparse
import asyncio

from ctxview.commands.common import add_session_argument, open_reader, pick_session, result_id
from ctxview.commands.errors import CliError
from ctxview.context import late_texts
from ctxview.rules.ids import format_id
from ctxview.rules.lines import split_lines
from ctxview.store.records import Body


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="the result's id, with or without #")
    add_session_argument(parser)
    parser.add_argument("--offset", type=int, default=1, help="first line, 1-based")
    parser.add_argument("--limit", type=int, default=None, help="how many lines (default: all)")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    rid = result_id(args.id)
    if args.offset < 1 or (args.limit is not None and args.limit < 1):
        raise CliError("--offset and --limit take whole numbers from 1.")
    reader = await open_reader(args)
    try:
        session = await pick_session(reader, args)

        async def look() -> Body | None:
            # One id space per session tree: a sub-agent's id is found from its parent, and back.
            holder = await reader.tree_holder(session.id, rid) or session.id
            return await reader.body(holder, rid)

        body = await late_texts.stored(rid, look)  # a proxy's elided text may still be on its way
    finally:
        await reader.close()
    if body is None:
        raise CliError(f"No stored result {format_id(rid)} in session {session.id}.")
    lines = split_lines(body.stored)
    last = len(lines) if args.limit is None else min(len(lines), args.offset + args.limit - 1)
    if lines and args.offset > len(lines):
        raise CliError(f"Offset {args.offset} is past the end; the result has {len(lines)} lines.")
    for line in lines[args.offset - 1 : last]:
        print(line)
    return 0
