"""What one import of a file did: how much it read, which sessions it filled, the lines it could
not take (each a `Problem`, its place and why)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class FileReport:
    path: str
    format: str | None = None
    session: str | None = None
    lines: int = 0  # lines read this time
    bytes: int = 0
    problems: list[Problem] = field(default_factory=list)
    replaced: bool = False  # the file was truncated or replaced since the last import
    waiting: bool = False  # an incomplete last line is left for later
    quiet: dict[str, int] = field(default_factory=dict)  # known kinds skipped -> how many
    refused: str | None = None  # why a file found beside the one followed is none to import
    # Every session the file filled this time: its own and its inline sidechains' (sub-agents'
    # child sessions), which the summary counted as none.
    sessions: set[str] = field(default_factory=set)
