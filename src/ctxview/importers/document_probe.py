"""Is this file a document format another agent writes (Gemini CLI's chat document, OpenCode's
storage/ folder)? Read only as far as the answer needs; `detect` and `documents` both ask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ctxview.files.regular import FileTooLarge, read_regular

_DOCUMENT_BYTES = 512 << 20


def gemini_document(path: Path, limit: int = _DOCUMENT_BYTES) -> dict[str, Any] | None:
    """Gemini CLI's chat document at `path`, or None when the file is not one (or not whole
    yet: Gemini rewrites it in place)."""
    try:
        doc = orjson.loads(read_regular(path, limit))
    except (orjson.JSONDecodeError, FileTooLarge, OSError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return None
    if not (isinstance(doc.get("sessionId"), str) and ("projectHash" in doc or "startTime" in doc)):
        return None
    return doc


def opencode_storage_root(path: Path) -> Path | None:
    """The storage/ folder of OpenCode's JSON files at or just under `path`, or None."""
    for root in (path, path / "storage"):
        if (root / "session").is_dir() and (root / "message").is_dir():
            return root
    return None
