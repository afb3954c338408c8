"""`ctxview install HOST [--project | --user]`: ctxview's hooks and MCP server in the host's
own config files (merged, idempotent; each change printed). Each host's files are edited by
its module in src/ctxview/agents (`install_claude`, `codex_install`), whose `install` and
`uninstall` return a plan of the changes, written by `plan.write()`."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

from ctxview.agents.claude_code.install import InstallError
from ctxview.commands.errors import CliError

HOSTS = {
    "claude-code": "claude_code.install",
    "codex": "codex.install",
    "gemini": "gemini.install",
    "pi": "pi.install",
    "opencode": "opencode.install",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    host_arguments(parser, "the agent to set up", "your user config, for every project")


def host_arguments(parser: argparse.ArgumentParser, host_help: str, user_help: str) -> None:
    """HOST [--project | --user]: the arguments install and uninstall share."""
    parser.add_argument("host", choices=sorted(HOSTS), help=host_help)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="this folder's config (the default)")  # fmt: skip
    scope.add_argument("--user", dest="scope", action="store_const", const="user",
                       help=user_help)  # fmt: skip
    parser.set_defaults(scope="project")


def host_module(host: str) -> Any:
    try:
        return importlib.import_module(f"ctxview.agents.{HOSTS[host]}")
    except ModuleNotFoundError as exc:
        if exc.name == f"ctxview.agents.{HOSTS[host]}":
            raise CliError(f"ctxview cannot set up {host} yet.") from None
        raise


def report(changes: list[str], written: list[Path], nothing: str) -> None:
    for line in changes:
        print(line)
    if not changes:
        print(nothing)
    for path in written:
        print(f"wrote {path}")


def run(args: argparse.Namespace) -> int:
    mod = host_module(args.host)
    store = Path(args.store).expanduser() if getattr(args, "store", None) else None
    try:
        if args.host == "codex":  # one config, $CODEX_HOME/config.toml: no scope
            plan = mod.install(mod.codex_home(), store)
        else:
            plan = mod.install(args.scope, Path.cwd(), Path.home(), store)
        written = plan.write()
    except (InstallError, OSError) as exc:
        raise CliError(str(exc)) from None
    report(plan.changes, written, f"{args.host}: already set up, nothing changed.")
    for note in getattr(plan, "notes", []):
        print(note)
    return 0
