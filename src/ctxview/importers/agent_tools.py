"""What the importers of the other agents (pi, Gemini CLI, OpenCode, Copilot CLI, Cursor, aider)
share: a tool result sorted into what the rules treat specially (a read, a search, an edit whose
old and new content are known, anything else), replayed through `Replay`; and the parts of a
parser the runner asks for that these formats do not need (none gathers a message over records).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ctxview.importers.replay import Replay


@dataclass(frozen=True)
class Read:
    path: str
    first: int
    lines: list[str]
    total: int | None  # None: the file's length is not said (the last line seen stands for it)


@dataclass(frozen=True)
class Search:
    tool: str  # grep, glob or list: the engine's same-result rule


@dataclass(frozen=True)
class Edit:
    path: str
    old: str | None  # None: the file was created
    new: str


@dataclass(frozen=True)
class Other:
    tool: str  # as the engine names it (bash) or the agent's own name
    changes: tuple[str, ...] = field(default_factory=tuple)  # paths it modified


How = Read | Search | Edit | Other


async def put_result(replay: Replay, how: How, args: dict[str, Any], text: str, *,
                     call_ref: str, seen: int, ts: float) -> str:  # fmt: skip
    """Store one tool result the way the rules would have answered it; the text they give."""
    ref: dict[str, Any] = dict(call_ref=call_ref, seen=seen, ts=ts)
    if isinstance(how, Read):
        given = {"path": how.path, **{k: v for k, v in args.items() if k != "path"}}
        return await replay.read(given, how.path, how.first, how.lines, how.total, **ref)
    if isinstance(how, Search):
        return await replay.search(how.tool, args, text, **ref)
    if isinstance(how, Edit):
        return await replay.edit("edit" if how.old is not None else "write",
                                 {"path": how.path, **args}, [(how.path, how.old, how.new)],
                                 **ref)  # fmt: skip
    return await replay.generic(how.tool, args, text, changes=how.changes, **ref)


def text_lines(text: str) -> list[str]:
    """A file's text as its lines (a final newline ends the last line, it makes no new one)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def numbered(text: str, pattern: re.Pattern[str]) -> tuple[int, list[str]] | None:
    """The first number and the lines of a result whose every line is numbered by `pattern`
    (group 1 the number, group 2 the text), consecutive; None when it is not one."""
    first: int | None = None
    out: list[str] = []
    for raw in text_lines(text):
        m = pattern.match(raw)
        if m is None:
            return None
        n = int(m.group(1))
        if first is None:
            first = n
        elif n != first + len(out):
            return None
        out.append(m.group(2))
    return (first, out) if first is not None else None


def path_arg(args: dict[str, Any], *keys: str) -> str | None:
    """The first of `keys` that holds a usable path."""
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value and "\x00" not in value:
            return value
    return None


def positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class SimpleParser:
    """The runner's parser protocol for formats that write each message whole in one record:
    nothing is ever gathered over records, so nothing is provisional."""

    quiet: dict[str, int]

    def unsaid(self) -> bool:
        return False

    async def provisional(self) -> None:
        return None

    def skip(self, kind: str) -> None:
        """A record of a known kind with nothing to import: counted for the import's summary."""
        self.quiet[kind] = self.quiet.get(kind, 0) + 1
