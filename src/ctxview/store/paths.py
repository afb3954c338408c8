"""Where the store lives, kept private: the file 0600, the folders we make 0700 whatever the umask.

An existing store file, its -wal and -shm, and ctxview's own folder (the default store's
`ctxview` folder, or any folder we create) are tightened to those modes when they are looser; a
folder above them that we did not make is never changed, only warned about when other users
could write to it (and so replace what is inside).
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path


class StoreWarning(UserWarning):
    """Something about the store the person should know; the command goes on. One sentence."""


def state_home() -> Path:
    state = os.environ.get("XDG_STATE_HOME")
    return Path(state).expanduser() if state else Path.home() / ".local" / "state"


def own_folder() -> Path:
    """ctxview's own folder, the default store's."""
    return state_home() / "ctxview"


def default_store_path() -> Path:
    if env := os.environ.get("CTXVIEW_STORE"):
        return Path(env).expanduser()
    return own_folder() / "store.db"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _make_folders(folder: Path) -> set[Path]:
    """Create `folder` and every missing folder above it 0700 (mkdir's mode is masked by the
    umask, so each is set after); return the ones made here."""
    missing: list[Path] = []
    at = folder
    while not at.exists():
        missing.append(at)
        at = at.parent
    made: set[Path] = set()
    for each in reversed(missing):
        try:
            each.mkdir(mode=0o700)
        except FileExistsError:
            continue  # another process made it at the same moment: not ours to set
        each.chmod(0o700)
        made.add(each)
    return made


def _tighten(path: Path, mode: int, what: str) -> None:
    try:
        now = _mode(path)
    except FileNotFoundError:
        return
    if now & 0o077 and os.stat(path).st_uid == os.geteuid():
        os.chmod(path, mode)
        warnings.warn(
            StoreWarning(f"{what} {path} could be read by other users (mode {now:04o}); "
                         f"it is now {mode:04o}."),
            stacklevel=2,
        )  # fmt: skip


def _warn_if_writable_by_others(folder: Path) -> None:
    """A folder others may write to (without the sticky bit, as /tmp has) lets them rename what
    is in it and put their own in its place."""
    try:
        st = os.stat(folder)
    except OSError:
        return
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        warnings.warn(
            StoreWarning(f"The folder {folder} above the store can be changed by other users "
                         f"(mode {stat.S_IMODE(st.st_mode):04o}); consider chmod go-w on it."),
            stacklevel=2,
        )  # fmt: skip


def prepare(path: Path) -> None:
    """Before SQLite opens `path` to write: the folders 0700 (those we make, and ctxview's own),
    warnings about the folders above. `fresh.make_if_missing` calls it, then makes the file."""
    path = Path(os.path.abspath(path))
    folder = path.parent
    made = _make_folders(folder)
    ours = Path(os.path.abspath(own_folder()))
    if folder not in made and folder == ours:
        _tighten(folder, 0o700, "ctxview's folder")
    for above in path.parents:
        if above not in made and above != ours:
            _warn_if_writable_by_others(above)


def tighten(path: Path) -> None:
    """An existing store file (and its -wal and -shm, which SQLite made with the store's mode
    then) looser than 0600 is made 0600, with one warning; called after the file was found to be
    a ctxview store, so a file that is not ours is left exactly as it was."""
    loose = []
    for each in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = os.stat(each)
        except FileNotFoundError:
            continue
        if st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.chmod(each, 0o600)
            loose.append(stat.S_IMODE(st.st_mode))
    if loose:
        warnings.warn(
            StoreWarning(f"The store {path} could be read by other users (mode {loose[0]:04o}); "
                         f"it is now 0600."),
            stacklevel=2,
        )  # fmt: skip
