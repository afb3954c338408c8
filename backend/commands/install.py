"""`ctxview install HOST [--project | --user]`: ctxview's hooks and MCP server in the host's
own config files (merged, idempotent; each change printed). Each host's files are in
backend/agents/install_<host>.py with `install(scope, cwd, home, store)` and
`uninstall(scope, cwd, home)` returning a `Plan`."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

HOSTS = {"claude-code": "install_claude", "codex": "install_codex"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=sorted(HOSTS), help="the agent to set up")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="this folder's config (the default)")  # fmt: skip
    scope.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="your user config, for every project")  # fmt: skip
    parser.set_defaults(scope="project")


def host_module(host: str):  # type: ignore[no-untyped-def]
    from ..cli import CliError

    try:
        return importlib.import_module(f"ctxview.backend.agents.{HOSTS[host]}")
    except ModuleNotFoundError as exc:
        if exc.name == f"ctxview.backend.agents.{HOSTS[host]}":
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
    from ..cli import CliError

    mod = host_module(args.host)
    store = Path(args.store).expanduser() if getattr(args, "store", None) else None
    try:
        plan = mod.install(args.scope, Path.cwd(), Path.home(), store)
        written = plan.write()
    except (mod.InstallError, OSError) as exc:
        raise CliError(str(exc)) from None
    report(plan.changes, written, f"{args.host}: already set up, nothing changed.")
    return 0
