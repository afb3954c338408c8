"""`ctxview hook EVENT`: run by Claude Code as a command hook (`ctxview install claude-code`
writes them). The work is in src/ctxview/agents/hook_client.py; `cli.main` calls it directly,
before anything heavy is imported, so this module only describes the command."""

from __future__ import annotations

import argparse

from ctxview.agents.hook_client import EVENTS, main


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("event", choices=sorted({*EVENTS, *EVENTS.values()}),
                   help="the hook event (Claude Code's input on stdin says it too)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    argv = [args.event]
    if getattr(args, "store", None):
        argv += ["--store", args.store]
    return main(argv)
