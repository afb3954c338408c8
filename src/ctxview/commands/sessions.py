"""`ctxview sessions [--json] [--agent NAME]`: the store's sessions, newest first, with the
agent each came from (its source); `--agent` keeps one agent's."""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from ctxview.commands.common import open_reader
from ctxview.report.agents import AGENT_NAMES, agent_source


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="a JSON list of objects")
    parser.add_argument("--agent", metavar="NAME",
                        help="only the sessions of one agent: claude, codex, gemini, opencode, "
                             "pi, copilot, cursor, aider (or a source as listed)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from ctxview.commands.errors import CliError

    source = None
    if args.agent:
        source = agent_source(args.agent) or args.agent.strip().lower()
        if not source:
            raise CliError("--agent needs a name: " + ", ".join(AGENT_NAMES) + ".")
    reader = await open_reader(args)
    try:
        rows = await reader.sessions()
    finally:
        await reader.close()
    if source is not None:
        # A source not in the table (demo, conformance, a newer agent's) is matched as it is.
        rows = [r for r in rows if r.source == source]
    if args.json:
        print(json.dumps([r.as_json() for r in rows], indent=2))
        return 0
    if not rows:
        print(f"No sessions of {args.agent} in the store." if source else
              "No sessions in the store yet.")  # fmt: skip
        return 0
    # Columns as wide as their longest value: an agent's id (`gm-<uuid>`) is 39 characters.
    wide = max(len("SESSION"), *(len(r.id) for r in rows))
    agent = max(len("AGENT"), *(len(r.source) for r in rows))
    print(f"{'SESSION':{wide}} {'STARTED':16} {'STATE':6} {'RESULTS':>7} {'SAVED':>9}  "
          f"{'AGENT':{agent}}  TITLE")  # fmt: skip
    for r in rows:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started))
        state = "live" if r.live else "ended"
        print(f"{r.id:{wide}} {started:16} {state:6} {r.results:7} {r.chars_saved:9}  "
              f"{r.source:{agent}}  {r.title}")  # fmt: skip
    return 0
