"""`ctxview uninstall HOST [--project | --user]`: removes exactly what `ctxview install` added."""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxview.agents.claude_code.install import InstallError
from ctxview.commands.errors import CliError
from ctxview.commands.install import host_arguments, host_module, report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    host_arguments(parser, "the agent to restore", "your user config")


def run(args: argparse.Namespace) -> int:
    mod = host_module(args.host)
    try:
        if args.host == "codex":
            plan = mod.uninstall(mod.codex_home())
            written = plan.write()
        else:
            plan = mod.uninstall(args.scope, Path.cwd(), Path.home())
            written = plan.write(remove_empty=True)
    except (InstallError, OSError) as exc:
        raise CliError(str(exc)) from None
    report(plan.changes, written, f"{args.host}: nothing of ctxview's was there.")
    for path in getattr(plan, "removed", []):
        print(f"removed {path} (nothing else was in it)")
    return 0
