"""Where a hook's failures go: a small JSON-lines log beside the store, which `ctxview doctor`
shows. Standard library only (the hook client imports it on its hot path), and never raises:
a hook that cannot even record its failure still prints nothing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

KEEP = 200  # the newest failures kept
_MAX_BYTES = 256 << 10


def log_path(store: Path | str) -> Path:
    return Path(f"{store}.hook-failures.jsonl")


def record(store: Path | str | None, event: str, what: str, detail: dict[str, Any] | None = None
           ) -> None:  # fmt: skip
    """Append one failure: when, which hook event, what went wrong (one line)."""
    if store is None:
        return
    entry = {"ts": time.time(), "event": event, "error": what, **(detail or {})}
    path = log_path(store)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
        if path.stat().st_size > _MAX_BYTES:
            kept = path.read_text(encoding="utf-8").splitlines()[-KEEP:]
            path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    except OSError:
        pass


def read(store: Path | str) -> list[dict[str, Any]]:
    """The failures recorded, oldest first ([] when there are none)."""
    try:
        lines = log_path(store).read_text(encoding="utf-8").splitlines()
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
