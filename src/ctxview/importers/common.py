"""What both parsers share: bad records, timestamps, usage in one counting, result text."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Any

import orjson


class BadRecord(Exception):
    """A record that cannot be imported: skipped, counted and reported with its line number."""


def need(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """`value` when it has the expected type, else a BadRecord naming the field."""
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise BadRecord(f"{what} is {type(value).__name__}, expected {names}")
    return value


# SQLite's INTEGER is 64-bit: a number from a transcript beyond it cannot be stored.
_INT_MAX = (1 << 63) - 1
# Seconds since the epoch a transcript's time may be: year 0001 to 9999 (NaN and the infinities,
# which JSON parsers accept, are not times).
_TIME_RANGE = (-62135596800.0, 253402300800.0)
_SURROGATES = re.compile("[\ud800-\udfff]")


def when(stamp: Any, fallback: float) -> float:
    """An ISO-8601 timestamp as seconds since the epoch; the fallback when there is none."""
    if isinstance(stamp, str) and stamp:
        try:
            value = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            return fallback
    elif isinstance(stamp, int | float) and not isinstance(stamp, bool):
        value = float(stamp) if abs(stamp) < 1e300 else math.nan
    else:
        return fallback
    return value if _TIME_RANGE[0] <= value <= _TIME_RANGE[1] else fallback


def whole(value: Any) -> int | None:
    """A count or a line number from a transcript: an int from 0 up to what SQLite stores."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT_MAX:
        return value
    return None


def id_text(value: Any) -> str | None:
    """An id or a name from a transcript: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def path_text(value: Any) -> str | None:
    """A path from a transcript: a non-empty string with no NUL (no file system has one)."""
    return value if isinstance(value, str) and value and "\x00" not in value else None


# How deep a record may nest (a list in a dict in a list ... counts one level each). Claude
# Code's and Codex's records nest a few tens of levels at most (a tool's JSON Schema in a request
# record); past this, a record is skipped and listed, so nothing that walks it later (the
# parser's saved state, the store's JSON, a copy) can run out of stack.
MAX_DEPTH = 200


class TooDeep(ValueError):
    """A record nested deeper than MAX_DEPTH levels."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")


def too_deep(value: Any, raw: bytes | str | None = None) -> bool:
    """Whether `value` (parsed from `raw`, when given) nests deeper than MAX_DEPTH. Without a
    stack of its own; a line with fewer brackets than that cannot, and is not walked."""
    if not isinstance(value, dict | list):
        return False
    if raw is not None:
        opens = (raw.count(b"[") + raw.count(b"{") if isinstance(raw, bytes)
                 else raw.count("[") + raw.count("{"))  # fmt: skip
        if opens <= MAX_DEPTH:
            return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False


def loads_bounded(text: str | bytes) -> Any:
    """JSON inside a record (Codex's function-call arguments): as `json.loads`, and TooDeep
    (a ValueError) past MAX_DEPTH instead of a RecursionError, or a value that would be one."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep from None
    if too_deep(value, text):
        raise TooDeep
    return value


def parse_line(raw: bytes) -> Any:
    """One JSON line (see `parse_record`), its strings made valid."""
    return parse_record(raw)[0]


def parse_record(raw: bytes) -> tuple[Any, bool]:
    """One JSON line and whether a string in it had to be repaired: orjson for speed; json where
    orjson is stricter (a lone surrogate escape, NaN, a BOM), and then every lone surrogate is
    replaced by U+FFFD. ValueError when it is not JSON, TooDeep (a ValueError) when it nests
    deeper than MAX_DEPTH."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        hits: list[int] = []
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(_why(exc)) from None
        except RecursionError:  # past orjson's 1024 levels: json's stack ran out too
            raise TooDeep from None
        if too_deep(value, raw):
            raise TooDeep from None  # before `_valid`, which walks it on the stack
        return _valid(value, hits), bool(hits)
    if too_deep(value, raw):
        raise TooDeep
    return value, False


def _why(exc: json.JSONDecodeError) -> str:
    """json's message ("Invalid control character at: line 1 column 11") as what happened."""
    rest = exc.doc[exc.pos :] if isinstance(exc.doc, str) else ""
    if exc.msg.startswith("Unterminated") or not rest.strip():
        return "the line ends in the middle of a record: it was cut short"
    if exc.msg.startswith("Invalid control character"):
        if not rest.strip("\r\n"):  # the line's own end, inside a string
            return "the line ends in the middle of a record: it was cut short"
        return f"a raw control character inside a string at column {exc.colno}"
    return f"damaged at column {exc.colno}: {exc.msg[:1].lower()}{exc.msg[1:]}"


def valid_unicode(value: Any) -> Any:
    """A parsed record with every lone surrogate (a JSON escape can carry one; no encoder takes
    it) replaced by U+FFFD, in keys and values at any depth: once here, every string that comes
    from a transcript can be stored, whichever column or JSON it ends up in."""
    return _valid(value, [])


def _valid(value: Any, hits: list[int]) -> Any:
    if isinstance(value, str):
        fixed, n = _SURROGATES.subn("\ufffd", value)
        if n:
            hits.append(n)
        return fixed
    if isinstance(value, list):
        return [_valid(v, hits) for v in value]
    if isinstance(value, dict):
        return {_valid(k, hits): _valid(v, hits) for k, v in value.items()}
    return value


def check_time(value: Any, what: str = "timestamp") -> None:
    """A time that is there but is a number no clock gives (NaN, infinite, past year 9999): the
    record is bad. (A string that does not parse is left to `when`'s fallback.)"""
    number = isinstance(value, float | int) and not isinstance(value, bool)
    if number and not (abs(value) < 1e300 and _TIME_RANGE[0] <= value <= _TIME_RANGE[1]):
        raise BadRecord(f"{what} {value!r:.40} is not a time")


def check_ids(rec: dict[str, Any], ids: tuple[str, ...], paths: tuple[str, ...],
              where: str = "") -> None:  # fmt: skip
    """Fields that name a session, a record or a folder: a string when present (and a path
    without NUL), else the record is bad; checked before anything uses them."""
    for key in ids:
        value = rec.get(key)
        if value is not None and not isinstance(value, str):
            raise BadRecord(f"{where}{key} is {type(value).__name__}, expected str")
    for key in paths:
        value = rec.get(key)
        if value is not None and not (isinstance(value, str) and "\x00" not in value):
            raise BadRecord(f"{where}{key} is not a path ({type(value).__name__})")


USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def claude_usage(usage: Any) -> dict[str, int] | None:
    """Claude counts additively: input excludes cache reads and cache writes."""
    if not isinstance(usage, dict):
        return None
    return {
        "input_tokens": _int(usage.get("input_tokens")),
        "output_tokens": _int(usage.get("output_tokens")),
        "cache_read_tokens": _int(usage.get("cache_read_input_tokens")),
        "cache_write_tokens": _int(usage.get("cache_creation_input_tokens")),
    }


def codex_usage(usage: Any) -> dict[str, int] | None:
    """Codex counts cached input inside input; normalised to Claude's additive counting."""
    if not isinstance(usage, dict):
        return None
    cached = _int(usage.get("cached_input_tokens"))
    return {
        "input_tokens": max(0, _int(usage.get("input_tokens")) - cached),
        "output_tokens": _int(usage.get("output_tokens")),
        "cache_read_tokens": cached,
        "cache_write_tokens": 0,
    }


def usage_max(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int] | None:
    if a is None or b is None:
        return a or b
    return {k: max(a.get(k, 0), b.get(k, 0)) for k in USAGE_KEYS}


def usage_delta(now: dict[str, int], before: dict[str, int]) -> dict[str, int] | None:
    """What grew since `before`, so that usage summed over events counts a message once."""
    delta = {k: max(0, now.get(k, 0) - before.get(k, 0)) for k in USAGE_KEYS}
    return delta if any(delta.values()) else None


def block_text(content: Any) -> str:
    """A tool result's or message's content as the text the agent got: a string, or blocks whose
    text parts are joined and whose images are a short placeholder."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else str(content)
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            parts.append(str(block))
            continue
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text"):
            text = block.get("text")
            parts.append(text if isinstance(text, str) else str(text))
        elif kind in ("image", "input_image"):
            src = block.get("source")
            media = src.get("media_type", "image") if isinstance(src, dict) else "image"
            size = len(src.get("data", "")) if isinstance(src, dict) else 0
            parts.append(f"[image {media}, {size} bytes base64]")
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)
