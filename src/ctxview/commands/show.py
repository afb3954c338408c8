"""`ctxview show ID`: one result as the model saw it (ID a result id), or with --session and no
ID the whole transcript, as plain text."""

from __future__ import annotations

import argparse
import asyncio
import json

from ctxview.commands.common import add_session_argument, open_reader, pick_session
from ctxview.commands.errors import CliError
from ctxview.rules.ids import format_id, parse_id


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", nargs="?", help="a result id (#1a2b) or a session id; "
                        "none: the session's whole transcript")  # fmt: skip
    add_session_argument(parser)
    parser.add_argument(
        "--stored", action="store_true", help="the full stored text, not the model's view"
    )


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    reader = await open_reader(args)
    try:
        target = args.id
        rid = parse_id(target) if target and (target.startswith("#") or len(target) <= 8) else None
        if target and rid is None:
            args.session = target  # a session id
        session = await pick_session(reader, args)
        if rid is not None:
            body = await reader.body(session.id, rid)
            if body is None:
                raise CliError(f"No stored result {format_id(rid)} in session {session.id}.")
            print(body.stored if args.stored else body.shown)
            return 0
        for ev in await reader.events(session.id):
            if ev.kind == "message":
                print(f"── {ev.role} ──\n{ev.text}")
            elif ev.kind == "call":
                print(f"── call {ev.tool} {ev.args} ──")
            elif ev.kind == "result" and ev.rid is not None:
                body = await reader.body(session.id, ev.rid)
                if body:
                    print(body.stored if args.stored else body.shown)
            elif ev.kind == "compaction":
                extra = json.loads(ev.data or "{}")
                print("══ compaction ══\n" + extra.get("inserted", ev.text or ""))
    finally:
        await reader.close()
    return 0
