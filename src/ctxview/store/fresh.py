"""A new store is made whole beside its place and linked in, so that no process ever sees it half
made: not a reader (an empty file is not a store), not a second writer (which would otherwise
race the first through SQLite's rollback-to-WAL switch and the schema's creation, waiting on
its locks, on a busy machine past the busy timeout)."""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import sqlite3
import time
from pathlib import Path

from ctxview.store import schema
from ctxview.store.paths import prepare

# A file left beside the store by a process killed while making it; older than this, it is
# nobody's work in progress (making one takes milliseconds).
STALE_SECONDS = 3600.0


def make_if_missing(path: Path) -> None:
    """Before a store is opened to write: its folders ready (`paths.prepare`), and the store at
    `path` made when there is no file there: built under a name of its own (mode 0600, WAL
    mode, the current schema), then hard-linked to `path`, which fails if another process
    linked its own first; that one is then the store. On a filesystem without hard links, an
    empty file is made instead and the store is created in place, as SQLite does (the writer's
    open then creates the schema under its lock)."""
    prepare(path)
    if os.path.lexists(path):
        return
    _remove_stale(path)
    aside = path.with_name(f".{path.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(aside, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)
    try:
        os.chmod(aside, 0o600)  # O_CREAT's mode is masked by the umask
        conn = sqlite3.connect(aside, isolation_level=None)
        try:
            conn.executescript(schema.PRAGMAS)
            schema.ensure(conn)
        finally:
            conn.close()  # the last connection: its -wal is checkpointed into the file, removed
        try:
            os.link(aside, path)
        except FileExistsError:
            pass  # another process made the store first
        except OSError:
            _make_empty(path)
    finally:
        for each in (aside, Path(f"{aside}-wal"), Path(f"{aside}-shm")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(each)


def _make_empty(path: Path) -> None:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, 0o600)


def _remove_stale(path: Path) -> None:
    cutoff = time.time() - STALE_SECONDS
    for each in path.parent.glob(f".{glob.escape(path.name)}.new-*"):
        with contextlib.suppress(OSError):
            if each.lstat().st_mtime < cutoff:
                each.unlink()
