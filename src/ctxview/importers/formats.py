"""The agents other than Claude Code and Codex whose session files ctxview imports: each format's
name (the session's `source`, which the viewer's Source column shows), the prefix of its session
keys and its parser, in one table the runner and the CLI read.

Two kinds. Line formats (one JSON record per line, appended as the agent runs) go through the
runner's `FileImporter` like Claude Code's and Codex's: byte offsets, resume, follow. Document
formats (a JSON document rewritten whole, a SQLite database, a folder of JSON files, aider's
Markdown) are read whole at each step by `importers/documents.py`, which imports the messages
it has not imported yet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxview.importers.runner import Hub, Parser

# Formats as `detect` names them. A line format's name is its session's source; a document
# format names its agent in `AGENT_OF`.
GEMINI = "gemini-cli"  # Gemini CLI's newer JSONL chat file
GEMINI_JSON = "gemini-cli-json"  # Gemini CLI's JSON document (rewritten whole)
OPENCODE = "opencode"  # OpenCode's SQLite database (1.x)
OPENCODE_STORAGE = "opencode-storage"  # OpenCode's older storage/ folder of JSON files
PI = "pi"
COPILOT = "copilot-cli"
CURSOR = "cursor"
AIDER = "aider"

AGENT_OF = {GEMINI: GEMINI, GEMINI_JSON: GEMINI, OPENCODE: OPENCODE, OPENCODE_STORAGE: OPENCODE,
            PI: PI, COPILOT: COPILOT, CURSOR: CURSOR, AIDER: AIDER}  # fmt: skip
# Session keys: `<prefix>-<the agent's own session id>`, as `cc-`/`cx-` (runner.session_id).
PREFIX = {GEMINI: "gm", OPENCODE: "oc", PI: "pi", COPILOT: "cp", CURSOR: "cu", AIDER: "ai"}
DOCUMENTS = frozenset({GEMINI_JSON, OPENCODE, OPENCODE_STORAGE, AIDER})

# The names a user may give `--agent` and the viewer's `agent:` filter for each source.
AGENT_NAMES = {
    "claude-code": ("claude", "claude-code", "cc"), "codex": ("codex", "cx"),
    GEMINI: ("gemini", "gemini-cli", "gm"), OPENCODE: ("opencode", "oc"), PI: ("pi",),
    COPILOT: ("copilot", "copilot-cli", "cp"), CURSOR: ("cursor", "cursor-cli", "cu"),
    AIDER: ("aider", "ai"),
}  # fmt: skip


def agent_source(name: str) -> str | None:
    """The source a name given by the user stands for (`gemini` -> `gemini-cli`), or None."""
    name = name.strip().lower()
    for source, names in AGENT_NAMES.items():
        if name == source or name in names:
            return source
    return None


@dataclass(frozen=True)
class LineFormat:
    source_ids: Callable[[Any], dict[str, Any] | None]
    parser: Callable[[Hub, dict[str, Any]], Parser]


def line_format(fmt: str) -> LineFormat | None:
    """The parser of a line format (None for Claude Code's, Codex's and the document formats).
    Imported here, not at the top: the parsers import the runner's types."""
    if fmt == PI:
        from ctxview.importers import pi

        return LineFormat(pi.source_ids, pi.PiParser)
    if fmt == COPILOT:
        from ctxview.importers import copilot

        return LineFormat(copilot.source_ids, copilot.CopilotParser)
    if fmt == CURSOR:
        from ctxview.importers import cursor

        return LineFormat(cursor.source_ids, cursor.CursorParser)
    if fmt == GEMINI:
        from ctxview.importers import gemini

        return LineFormat(gemini.source_ids, gemini.GeminiParser)
    return None
