"""§2 and §6: the dedupe table, and the decision whether a result is a stub.

The table holds full reads (path, lines, hash) and full results of the `dedupe.by_result` tools
(tool, arguments, hash of the text). Compaction empties it (§7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReadEntry:
    rid: int
    path: str  # resolved against the workspace: `./a.py` and `a.py` are one path
    shown_path: str  # as the call gave it, for the files-read table
    first: int
    last: int
    total: int
    sha: str  # the full SHA-256 of the file's bytes; only it decides "unchanged"


@dataclass(frozen=True)
class ResultEntry:
    rid: int
    tool: str
    args_key: str
    text_sha: str


def args_key(args: dict[str, Any]) -> str:
    """Arguments compared as JSON with sorted keys (§6)."""
    return json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass
class DedupeTable:
    reads: list[ReadEntry] = field(default_factory=list)
    results: list[ResultEntry] = field(default_factory=list)

    def unchanged(self, path: str, sha: str, first: int, last: int) -> ReadEntry | None:
        """The newest full read of `path` with this hash whose lines hold first..last wholly."""
        for entry in reversed(self.reads):
            if (
                entry.path == path
                and entry.sha == sha
                and entry.first <= first
                and last <= entry.last
            ):
                return entry
        return None

    def same_result(self, tool: str, key: str, text_sha: str) -> ResultEntry | None:
        for entry in reversed(self.results):
            if entry.tool == tool and entry.args_key == key and entry.text_sha == text_sha:
                return entry
        return None

    def add_read(self, entry: ReadEntry) -> None:
        self.reads.append(entry)

    def add_result(self, entry: ResultEntry) -> None:
        self.results.append(entry)

    def newest_reads(self, rows: int) -> list[ReadEntry]:
        """The newest full read of each path, newest last, at most `rows` (§7)."""
        newest: dict[str, ReadEntry] = {}
        for entry in self.reads:
            newest.pop(entry.path, None)  # re-inserted: dict order becomes "newest last"
            newest[entry.path] = entry
        listed = list(newest.values())
        return listed[-rows:] if rows > 0 else []

    def clear(self) -> None:
        self.reads.clear()
        self.results.clear()
