"""Team sync: push the local store's sessions to PostgreSQL, pull them into a replica."""

from __future__ import annotations

import re
import time
from datetime import datetime

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str | None) -> float | None:
    """`--since`: an ISO date or time (2026-12-01, 2026-12-01T08:00) or an age (30m, 2h, 7d)."""
    if text is None:
        return None
    from ..cli import CliError

    if m := _AGO.match(text.strip()):
        return time.time() - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise CliError(f"--since {text!r} is neither a date (2026-12-01) nor an age (2h, 7d).") from None
