"""Where a hook's failures go: a small JSON-lines log beside the store, which `ctxview doctor`
shows. Standard library only and no pathlib (the hook client loads it on its hot path, as a
plain file), and never raises: a hook that cannot even record its failure prints nothing."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

KEEP = 200  # the newest failures kept
_MAX_BYTES = 256 << 10


def log_path(store: Path | str) -> str:
    return f"{os.fspath(store)}.hook-failures.jsonl"


def record(store: Path | str | None, event: str, what: str, detail: dict[str, Any] | None = None
           ) -> None:  # fmt: skip
    """Append one failure: when, which hook event, what went wrong (one line)."""
    if store is None:
        return
    entry = {"ts": time.time(), "event": event, "error": what, **(detail or {})}
    path = log_path(store)
    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
        if os.path.getsize(path) > _MAX_BYTES:
            with open(path, encoding="utf-8") as f:
                kept = f.read().splitlines()[-KEEP:]
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(kept) + "\n")
    except OSError:
        pass


def about(raw: bytes, event: str) -> tuple[str, dict[str, Any]]:
    """The hook event and the session, tool and call a hook input names, for a failure."""
    try:
        payload = json.loads(raw)
    except ValueError:
        return event, {}
    if not isinstance(payload, dict):
        return event, {}
    detail = {k: payload[k] for k in ("session_id", "tool_name", "tool_use_id")
              if isinstance(payload.get(k), str)}  # fmt: skip
    return str(payload.get("hook_event_name") or event), detail


def read(store: Path | str) -> list[dict[str, Any]]:
    """The failures recorded, oldest first ([] when there are none)."""
    try:
        with open(log_path(store), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out
