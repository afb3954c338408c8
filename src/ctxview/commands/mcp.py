"""`ctxview mcp [--tools recall|all] [--workspace DIR]`: a stdio MCP server (run by the host)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxview.commands.common import store_path
from ctxview.commands.errors import CliError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tools", choices=("recall", "all"), default="recall",
                        help="recall only (beside a host's hooked tools), or the engine's whole "
                        "set: read write edit multiedit apply_patch list glob grep bash recall")  # fmt: skip
    parser.add_argument("--workspace", metavar="DIR",
                        help="the folder the tools work in (default: the host's working folder)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from ctxview.agents.mcp.server import TOOL_SETS, serve  # the SDK loads only for this command

    workspace = Path(args.workspace).expanduser() if args.workspace else Path.cwd()
    if not workspace.is_dir():
        raise CliError(f"There is no folder {workspace}.")
    serve(store_path(args), workspace.resolve(), TOOL_SETS[args.tools])
    return 0
