"""Opening a file that someone else named (a hook input's `transcript_path` or edited file, a
transcript given to `import`) without ever blocking: only a regular file is read.

A FIFO opened for reading blocks until a writer comes, a character device (`/dev/zero`) never
ends, a directory is no text: each would stall the process reading it (the resident hook engine
serves every session of a store). The file is opened with O_NONBLOCK, which makes an open of a
FIFO return at once, and refused unless `fstat` on the open descriptor says it is a regular
file, so a link or a rename swapped in between a check and the open cannot get past."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The path names something other than a regular file (a FIFO, a device, a folder)."""


class FileTooLarge(OSError):
    """A regular file longer than the caller will read."""


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading in binary, when it is a regular file (links followed); raises
    NotRegularFile (an OSError) otherwise, and OSError when it cannot be opened."""
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{os.fspath(path)} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The whole of a regular file; NotRegularFile for anything else, FileTooLarge for a file
    longer than `limit` bytes (never read past it)."""
    with open_regular(path) as f:
        if limit is None:
            return f.read()
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(f"{os.fspath(path)} is longer than {limit} bytes")
    return data


def is_regular(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a regular file now (links followed; no open, so never blocks)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def stamp(path: str | os.PathLike[str]) -> tuple[int, int, int] | None:
    """What the file at `path` is now (inode, size, mtime), from a stat, never an open (links
    followed); None when there is none. Equal stamps: nothing to read again."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
