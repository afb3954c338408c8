"""What `ctxview push` and `ctxview pull` both take: the server's URL, --since, --watch,
--quiet (command-line parsing: it raises the commands' `CliError`)."""

from __future__ import annotations

import argparse
import os
import re
import time
from datetime import datetime

from ctxview.commands.errors import CliError

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str | None) -> float | None:
    """`--since`: an ISO date or time (2026-12-01, 2026-12-01T08:00) or an age (30m, 2h, 7d)."""
    if text is None:
        return None
    if m := _AGO.match(text.strip()):
        return time.time() - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise CliError(
            f"--since {text!r} is neither a date (2026-12-01) nor an age (2h, 7d)."
        ) from None


def add_arguments(parser: argparse.ArgumentParser, flag: str, env: str, url_help: str,
                  watch_help: str) -> None:  # fmt: skip
    """What push and pull both take: the server's URL (`flag`, or $`env`), --since, --watch,
    --quiet (each adds its own --session and filters)."""
    parser.add_argument(flag, dest="url", metavar="URL", default=os.environ.get(env),
                        help=f"{url_help} (${env})")  # fmt: skip
    parser.add_argument("--since", metavar="WHEN", help="sessions started since (2h, 2026-12-01)")
    parser.add_argument("--watch", action="store_true", help=watch_help)
    parser.add_argument("--quiet", action="store_true", help="no summary line")


def url_and_since(args: argparse.Namespace, command: str, flag: str) -> tuple[str, float | None]:
    if not args.url:
        raise CliError(f"{command} needs {flag} postgresql://user@host/dbname.")
    return str(args.url), parse_since(args.since)
