"""A plain progress bar on stderr for a long import: files and bytes, redrawn at most 10 times a
second, only when stderr is a terminal (or when asked)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

_WIDTH = 30


class ProgressBar:
    def __init__(self, files: int, total_bytes: int, *, enabled: bool,
                 stream: TextIO | None = None) -> None:  # fmt: skip
        self.files, self.total = files, max(total_bytes, 1)
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done_files = 0
        self.done_bytes = 0
        self._drawn = 0.0

    def advance(self, nbytes: int) -> None:
        self.done_bytes += nbytes
        self._draw()

    def file_done(self, size_left: int = 0) -> None:
        self.done_files += 1
        self.done_bytes += size_left  # bytes an unchanged or refused file did not need reading
        self._draw(force=True)

    def close(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        frac = min(1.0, self.done_bytes / self.total)
        bar = "#" * int(frac * _WIDTH)
        self.stream.write(
            f"\r[{bar:<{_WIDTH}}] {self.done_files}/{self.files} files  "
            f"{self.done_bytes / 1e6:.1f}/{self.total / 1e6:.1f} MB"
        )
        self.stream.flush()
