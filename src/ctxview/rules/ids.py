"""§1 Every result has an id: `#` and lowercase hex, at least `ids.digits` digits."""

from __future__ import annotations

import re

_ID = re.compile(r"#?([0-9a-fA-F]+)")


def format_id(rid: int, digits: int = 4) -> str:
    return f"#{rid:0{digits}x}"


def parse_id(text: str) -> int | None:
    """`#a3f2` or `a3f2` to its number; None when it is not an id at all. The `#` is optional."""
    match = _ID.fullmatch(text.strip())
    return int(match.group(1), 16) if match else None


# An id in running text: `#` then at least 4 hex digits, not inside a longer word.
ID_IN_TEXT = re.compile(r"(?<![\w#])#([0-9a-f]{4,})\b")
