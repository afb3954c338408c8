"""Which store session a host's process belongs to. The session's write lock the hooks and the
MCP server take (and the importers beside them wait for) is the store's
(`store/session_lock.py`); it is named here too, where the agents have always found it. The
store's one-shot lookup (`store.probe`, plain sqlite3, read-only): this runs on the MCP call's
hot path."""

from __future__ import annotations

import os
from pathlib import Path

from ctxview.store import probe
from ctxview.store.session_lock import (
    HookPending,
    LockTimeout,
    held_here,
    lock_free,
    lock_path,
    session_lock,
)

__all__ = [
    "CLAUDE",
    "HookPending",
    "LockTimeout",
    "held_here",
    "live_session",
    "lock_free",
    "lock_path",
    "session_lock",
]

CLAUDE = "claude-code"


def live_session(store: Path | str, host: str, cwd: Path | str) -> str | None:
    """The session a host's child process (an MCP server) belongs to: `CTXVIEW_SESSION` when
    set; for Claude Code `cc-$CLAUDE_CODE_SESSION_ID` (it sets that for the servers it starts);
    else the live session of `host` whose workspace is `cwd`, the most recently active. None
    when there is none (or no store)."""
    if env := os.environ.get("CTXVIEW_SESSION"):
        return env
    if host == CLAUDE and (sid := os.environ.get("CLAUDE_CODE_SESSION_ID")):
        return f"cc-{sid}"
    path = Path(store)
    if not path.exists():
        return None
    return probe.live_session(path, host, str(Path(cwd).resolve()))
