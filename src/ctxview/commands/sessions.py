"""`ctxview sessions [--json]`: the store's sessions, newest first."""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from ctxview.commands.common import open_reader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="a JSON list of objects")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    reader = await open_reader(args)
    try:
        rows = await reader.sessions()
    finally:
        await reader.close()
    if args.json:
        print(json.dumps([r.as_json() for r in rows], indent=2))
        return 0
    if not rows:
        print("No sessions in the store yet.")
        return 0
    print(f"{'SESSION':24} {'STARTED':16} {'STATE':6} {'RESULTS':>7} {'SAVED':>9}  TITLE")
    for r in rows:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started))
        state = "live" if r.live else "ended"
        print(f"{r.id:24} {started:16} {state:6} {r.results:7} {r.chars_saved:9}  {r.title}")
    return 0
