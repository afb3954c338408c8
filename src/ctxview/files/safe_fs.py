"""Workspace files reached without following links, openat style.

Every path is a workspace key (`src/app.py`: relative, no `..`, no link, as `Workspace.resolve`
makes it) and is reached from a directory fd of the workspace root, one component at a time,
each opened with O_NOFOLLOW (folders with O_DIRECTORY too). Writes go to a temporary file made in
the parent folder's fd and renamed over the name with dir fds; deletes unlink by dir fd. So when
another process swaps a component for a symlink after the key was made, the call fails (ELOOP or
ENOTDIR) instead of reaching outside the workspace: no read, write, rename or delete ever
resolves a name through a link. Standard library only: the search worker imports it too.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put in place after the check must not block the open.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class NotRegularError(OSError):
    """The name is a FIFO, a socket or a device: never opened for its content."""


def split(key: str) -> list[str]:
    return [] if key in ("", ".") else key.split("/")


def _swapped(name: str) -> OSError:
    return OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)


@contextmanager
def open_dir(root: str, parts: list[str], create: bool = False) -> Iterator[int]:
    """A directory fd for root/parts, each component opened from the one before without
    following links; `create` makes missing folders (mkdir by dir fd, then opened the same way)."""
    fd = os.open(root, DIR_FLAGS)
    try:
        for name in parts:
            try:
                sub = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                sub = os.open(name, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = sub
        yield fd
    finally:
        os.close(fd)


def lstat(root: str, key: str) -> os.stat_result | None:
    """The entry itself (a link is not followed), or None when it is missing."""
    parts = split(key)
    try:
        with open_dir(root, parts[:-1]) as d:
            return os.stat(parts[-1] if parts else ".", dir_fd=d, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check_kind(st: os.stat_result, name: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if stat.S_ISLNK(st.st_mode):
        raise _swapped(name)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularError(errno.EINVAL, "not a regular file", name)


def read_at(dir_fd: int, name: str, max_size: int | None = None) -> bytes | None:
    """A regular file's bytes from its folder's fd; None when it is bigger than `max_size`."""
    _check_kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False), name)  # no device opened
    fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        _check_kind(st, name)  # what was opened, should the name have changed since the stat
        if max_size is not None and st.st_size > max_size:
            return None
        return f.read()


def read(root: str, key: str) -> bytes:
    parts = split(key)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), ".")
    with open_dir(root, parts[:-1]) as d:
        data = read_at(d, parts[-1])
    assert data is not None
    return data


def write(root: str, key: str, data: bytes) -> None:
    """Replace (or create) the file atomically: a temporary file in the same folder's fd, renamed
    over the name by dir fds. An existing file keeps its permission bits."""
    parts = split(key)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), ".")
    name = parts[-1]
    with open_dir(root, parts[:-1], create=True) as d:
        mode = None
        with suppress(FileNotFoundError):
            st = os.stat(name, dir_fd=d, follow_symlinks=False)
            _check_kind(st, name)
            mode = stat.S_IMODE(st.st_mode)
        temp = f".ctxview-{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, TEMP_FLAGS, 0o666 if mode is None else 0o600, dir_fd=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if mode is not None:
                    os.fchmod(f.fileno(), mode)
            os.replace(temp, name, src_dir_fd=d, dst_dir_fd=d)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp, dir_fd=d)
            raise


def unlink(root: str, key: str) -> None:
    """Remove the name (a link put there is removed itself, never what it points to)."""
    parts = split(key)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), ".")
    with open_dir(root, parts[:-1]) as d, suppress(FileNotFoundError):
        os.unlink(parts[-1], dir_fd=d)


def walk(dir_fd: int, rel: str = "") -> Iterator[tuple[str, list[str], list[str], int]]:
    """(folder key relative to the start, sorted sub-folders, sorted other names, folder fd),
    top down; the caller may prune the sub-folder list. A sub-folder is entered by opening it
    from its parent's fd with O_NOFOLLOW, so a link to a folder is listed but never entered."""
    dirs: list[str] = []
    files: list[str] = []
    with os.scandir(dir_fd) as it:
        for entry in it:
            try:
                (dirs if entry.is_dir() else files).append(entry.name)
            except OSError:
                files.append(entry.name)
    dirs.sort()
    files.sort()
    yield rel, dirs, files, dir_fd
    for name in dirs:
        try:
            sub = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except OSError:
            continue  # a link to a folder, or gone since the listing
        try:
            yield from walk(sub, f"{rel}/{name}" if rel else name)
        finally:
            os.close(sub)
