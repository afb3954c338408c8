"""The source file as a stream of complete lines from a byte offset, and its identity, so an
import resumes where it stopped and notices a file that was truncated or replaced."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxview.files.regular import open_regular

HEAD_BYTES = 4096


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line number in the file
    start: int  # byte offset of the line's first byte
    end: int  # byte offset just past it (past its newline when it has one)
    raw: bytes  # as read, its newline included (JSON ignores it; a copy of a 1 MB line is not)
    complete: bool  # it ended in a newline


@dataclass(frozen=True)
class Identity:
    dev: int
    ino: int
    size: int


def identity(path: Path) -> Identity:
    st = os.stat(path)
    return Identity(st.st_dev, st.st_ino, st.st_size)


def head_hash(path: Path, upto: int) -> str:
    """SHA-256 of the file's first min(upto, HEAD_BYTES) bytes: the same file grown keeps it."""
    with open_regular(path) as f:
        return hashlib.sha256(f.read(min(upto, HEAD_BYTES))).hexdigest()[:16]


def lines_from(path: Path, offset: int, number: int) -> Iterator[Line]:
    """Lines from byte `offset` (line `number` + 1 onwards), one at a time: a line of any length
    is read whole, but the file never is. The last line may be incomplete (no newline yet).
    Only a regular file is read (`NotRegularFile`, an OSError, for a FIFO, a device, a folder)."""
    with open_regular(path) as f:
        f.seek(offset)
        pos = offset
        for raw in f:
            number += 1
            end = pos + len(raw)
            yield Line(number, pos, end, raw, raw.endswith(b"\n"))
            pos = end
