"""`ctxview conformance FILE...`: run the spec's cases; ends with `N passed, M failed`."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from ctxview.commands.errors import CliError
from ctxview.engine.conformance import CaseFileError, run_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, help="case files (conformance/*.json)")


def run(args: argparse.Namespace) -> int:
    try:
        _passed, failed = asyncio.run(run_files(args.files))
    except CaseFileError as exc:
        raise CliError(str(exc)) from None
    return 1 if failed else 0
