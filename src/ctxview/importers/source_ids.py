"""Which session of its agent a source file holds: the ids its first lines give (or its file
name), and the store's key for it (`cc-`, `cx-`, or another agent's prefix)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxview.importers import formats
from ctxview.importers.detect import CODEX


@dataclass
class SourceIds:
    session: str
    agent: str | None = None
    cwd: str = ""
    started: float | None = None  # None: no line read so far gives a time
    legacy: bool = False
    final: bool = True  # False: the file is too short yet to be sure (it may grow)

    unnamed: bool = False  # no line read so far says whose session it is (named by the file)

    def title(self, fmt: str) -> str:
        return Path(self.cwd).name or f"{fmt} {self.session[:8]}"

    def provisional(self) -> dict[str, Any]:
        """What to look at again as the file grows ({} when nothing can change any more)."""
        if self.final:
            return {}
        return {"session": self.session, "cwd": self.cwd, "started": self.started,
                "unnamed": self.unnamed}  # fmt: skip


def named_by_file(path: Path, final: bool = True) -> SourceIds:
    stem = path.stem
    return SourceIds(stem[6:] if stem.startswith("agent-") else stem,
                     agent=stem[6:] if stem.startswith("agent-") else None,
                     final=final, unnamed=True)  # fmt: skip


def session_id(fmt: str, ids: SourceIds) -> str:
    if fmt in formats.PREFIX:
        return f"{formats.PREFIX[fmt]}-{ids.session}"
    if fmt == CODEX:
        return f"cx-{ids.session}"
    return f"cc-{ids.agent}" if ids.agent else f"cc-{ids.session}"
