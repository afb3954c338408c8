"""Where the store lives, created private (0600 in a 0700 folder)."""

from __future__ import annotations

import os
from pathlib import Path


def default_store_path() -> Path:
    if env := os.environ.get("CTXVIEW_STORE"):
        return Path(env).expanduser()
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state else Path.home() / ".local" / "state"
    return base / "ctxview" / "store.db"


def prepare(path: Path) -> None:
    """Make the folder 0700 (when we create it) and the file 0600 before SQLite opens it."""
    folder = path.parent
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
            folder.chmod(0o700)  # mkdir's mode is masked by the umask
        except FileExistsError:
            pass  # another process made it at the same moment
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        path.chmod(0o600)
