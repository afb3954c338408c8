"""The agents other than Claude Code and Codex whose session files ctxview imports: each format's
name (the session's `source`, which the viewer's Source column shows), the prefix of its session
keys and its parser, in one table the runner and the CLI read.

Two kinds. Line formats (one JSON record per line, appended as the agent runs) go through the
runner's `FileImporter` like Claude Code's and Codex's: byte offsets, resume, follow. Document
formats (a JSON document rewritten whole, a SQLite database, a folder of JSON files, aider's
Markdown) are read whole at each step by `importers/documents.py`, which imports the messages
it has not imported yet."""

from __future__ import annotations

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
# Session keys: `<prefix>-<the agent's own session id>`, as `cc-`/`cx-` (source_ids.session_id).
PREFIX = {GEMINI: "gm", OPENCODE: "oc", PI: "pi", COPILOT: "cp", CURSOR: "cu", AIDER: "ai"}
DOCUMENTS = frozenset({GEMINI_JSON, OPENCODE, OPENCODE_STORAGE, AIDER})
