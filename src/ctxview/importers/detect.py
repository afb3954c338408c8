"""Which transcript format a file holds, decided from its content (never from its name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxview.files.regular import open_regular
from ctxview.importers.common import parse_line

CLAUDE = "claude-code"
CODEX = "codex"
EXPORT = "ctxview-export"  # `ctxview export --format json` (src/ctxview/importers/ctxview_json.py)

# Record types only Claude Code writes, and only Codex writes (FORMATS.md 1.3, 2.2).
_CLAUDE_TYPES = frozenset({
    "user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation",
    "progress", "attachment", "permission-mode", "last-prompt", "pr-link", "custom-title",
    "ai-title", "agent-name", "worktree-state", "mode",
})  # fmt: skip
_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_CODEX_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output",
                          "custom_tool_call", "custom_tool_call_output", "local_shell_call"})  # fmt: skip

# How much of a file is looked at: enough lines to pass a few bad ones, never the whole file.
# A line is read whole, however long (one record can be a 50 MB image), but only while fewer
# than _PEEK_BYTES have been read: a file of huge lines of neither format is not read through.
_PEEK_LINES = 20
_PEEK_BYTES = 256 << 20


# What `classify` says of a record of another agent's that looks like one of ours: the file is
# neither, whatever its later lines look like.
FOREIGN = "foreign"


class NotTranscript(Exception):
    """The file is neither format; the message is one sentence."""


def classify(record: Any) -> str | None:
    """The format one parsed line belongs to, or None when the line says nothing."""
    if not isinstance(record, dict):
        return None
    if record.get("type") == "export" and record.get("format") == EXPORT:
        return EXPORT
    kind = record.get("type")
    message = record.get("message")
    if isinstance(message, dict) and "parts" in message and "content" not in message:
        return FOREIGN  # Gemini's message shape (Qwen Code writes it in Claude Code-like records)
    if isinstance(kind, str):
        if kind in _CODEX_TYPES and "payload" in record:
            return CODEX
        if kind in _CLAUDE_TYPES and ("uuid" in record or "sessionId" in record or
                                      "message" in record or kind in ("summary",)):  # fmt: skip
            return CLAUDE
        if kind in _CLAUDE_TYPES and kind not in ("user", "assistant", "system"):
            return CLAUDE
        if kind in _CODEX_ITEMS and "uuid" not in record and (
                kind != "message" or "role" in record):  # fmt: skip
            # A bare ResponseItem of the legacy Codex layout (a message carries its role at
            # the top; pi's `{"type": "message", "message": {...}}` is not one).
            return CODEX
    if "record_type" in record:
        return CODEX  # legacy Codex: {"record_type": "state"}
    if "id" in record and "timestamp" in record and ("instructions" in record or "git" in record):
        return CODEX  # legacy Codex first line
    if "sessionId" in record and "uuid" in record:
        return CLAUDE  # a Claude Code record of a type newer than this list
    return None


def detect(path: Path) -> str | None:
    """`claude-code`, `codex`, or None for an empty file (nothing to decide yet).

    Raises NotTranscript when the first lines that parse say neither format."""
    seen_json = False
    with open_regular(path) as f:  # a FIFO or a device is refused, never waited on
        for _ in range(_PEEK_LINES):
            if f.tell() >= _PEEK_BYTES:
                break
            raw = f.readline()
            if not raw:
                break
            if not raw.strip():
                continue
            try:
                record = parse_line(raw)
            except (ValueError, RecursionError):
                continue
            seen_json = True
            found = classify(record)
            if found == FOREIGN:
                break
            if found:
                return found
        empty = f.tell() == 0
    if empty:
        return None
    what = "JSON lines" if seen_json else "text"
    raise NotTranscript(
        f"{path} is neither a Claude Code nor a Codex transcript (its first lines are {what} "
        "of neither format)."
    )
