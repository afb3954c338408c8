"""Which transcript format a file holds, decided from its content (never from its name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxview.files.regular import open_regular
from ctxview.importers import formats
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
    other = _other_agent(record, kind, message)
    if other is not None:
        return other
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


# pi's entry types (FORMATS.md 6) and its message roles.
_PI_TYPES = frozenset({"session", "message", "model_change", "thinking_level_change",
                       "compaction", "session_info", "custom", "custom_message", "label",
                       "branch_summary"})  # fmt: skip
_PI_ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom",
                       "branchSummary", "compactionSummary"})  # fmt: skip
# Copilot CLI's event families (FORMATS.md 7): `session.start`, `tool.execution_complete`, ...
_COPILOT_FAMILIES = ("session.", "user.", "assistant.", "tool.", "system.", "subagent.", "hook.",
                     "skill.", "abort")  # fmt: skip
_GEMINI_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})


def _other_agent(record: dict[str, Any], kind: Any, message: Any) -> str | None:
    """The format of a record of Gemini CLI, pi, Copilot CLI or Cursor, else None."""
    if "sessionId" in record and "projectHash" in record:
        # Gemini's header: the JSONL file's first line, or the whole JSON document in one line.
        return formats.GEMINI_JSON if isinstance(record.get("messages"), list) else formats.GEMINI
    if "uuid" in record or "payload" in record:
        return None  # Claude Code's, Codex's (or Qwen's, refused above)
    if isinstance(kind, str):
        if kind == "session" and "cwd" in record and "id" in record:
            return formats.PI
        if kind in _PI_TYPES and "timestamp" in record and kind != "message":
            return formats.PI if kind != "session" else None
        if kind == "message" and isinstance(message, dict) and message.get("role") in _PI_ROLES:
            return formats.PI
        if kind.startswith(_COPILOT_FAMILIES) and isinstance(record.get("data"), dict):
            return formats.COPILOT
        if kind in ("gemini", "info", "error", "warning") and "id" in record and \
                "content" in record:  # fmt: skip
            return formats.GEMINI
        return None
    if "$set" in record or "$rewindTo" in record:
        return formats.GEMINI
    if record.get("role") in ("user", "assistant") and isinstance(message, dict) and \
            "content" in message:  # fmt: skip
        return formats.CURSOR
    return None


_SQLITE = b"SQLite format 3\x00"
_NOT_YET = "(not yet)"  # `_document`'s word for a file that cannot be told apart yet
_AIDER = b"# aider chat started at "
# A JSON document (Gemini CLI's chat) is parsed whole to be told apart; past this size it is not.
_DOCUMENT_BYTES = 512 << 20


def _document(path: Path) -> str | None:
    """The format of a file that is not JSON lines: OpenCode's database, Gemini CLI's JSON
    document, aider's chat history; None when it is none of them (then read as JSON lines)."""
    from ctxview.importers.document_probe import gemini_document, opencode_storage_root
    from ctxview.store import foreign_opencode

    if path.is_dir():
        if opencode_storage_root(path) is not None:
            return formats.OPENCODE_STORAGE
        raise NotTranscript(f"{path} is a folder, not a transcript.")
    with open_regular(path) as f:
        head = f.read(64 << 10)
    if head.startswith(_SQLITE):
        if foreign_opencode.is_opencode(path):
            return formats.OPENCODE
        if foreign_opencode.is_blank(path):
            return _NOT_YET  # OpenCode starting: its tables come in a moment
        raise NotTranscript(
            f"{path} is a SQLite database but not OpenCode's (no session, message and part "
            "tables; the older Go OpenCode, now Crush, is not read)."
        )
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    if not first.lstrip().startswith((b"{", b"[")) and (
            first.startswith(_AIDER) or b"\n" + _AIDER in head):  # fmt: skip
        return formats.AIDER  # its header at the start, or after a mode line and a slice
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{") and b"\n" in head and not head.split(b"\n", 1)[0].rstrip().endswith(
            b"}") and gemini_document(path, _DOCUMENT_BYTES) is not None:  # fmt: skip
        return formats.GEMINI_JSON  # pretty-printed: its first line is not a record
    return None


def detect(path: Path) -> str | None:
    """`claude-code`, `codex`, another agent's format (`formats.py`), or None for an empty file
    (nothing to decide yet).

    Raises NotTranscript when the first lines that parse say none of them."""
    document = _document(path)
    if document == _NOT_YET:
        return None  # as an empty file: nothing to decide yet
    if document is not None:
        return document
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
        f"{path} is neither a Claude Code nor a Codex transcript, nor a session file of Gemini "
        f"CLI, OpenCode, pi, Copilot CLI, Cursor or aider (its first lines are {what} of none "
        "of these formats)."
    )
