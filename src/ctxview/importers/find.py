"""Where transcripts are: the files under the paths given, and the newest session on this machine."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def claude_root() -> Path:
    """Claude Code's projects folder (`$CLAUDE_CONFIG_DIR`, as Claude Code itself reads it)."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude").expanduser() / "projects"


def codex_root() -> Path:
    """Codex's rollouts (`$CODEX_HOME`, as Codex itself reads it)."""
    return Path(os.environ.get("CODEX_HOME") or "~/.codex").expanduser() / "sessions"


def _order(path: Path) -> tuple[int, str]:
    # A parent session before its sub-agents, so the link is made as the agent is created.
    return (1 if path.name.startswith("agent-") else 0, str(path))


def _other_agents(folder: Path) -> list[Path]:
    """The session files of the other agents under `folder` that are not `*.jsonl`: Gemini CLI's
    `chats/*.json`, OpenCode's `opencode.db` and storage/ folder, aider's history."""
    from ctxview.importers.document_probe import opencode_storage_root

    out = [f for f in folder.rglob("*.json") if f.parent.name == "chats" and f.is_file()]
    out += [f for f in folder.rglob("opencode.db") if f.is_file()]
    out += [f for f in folder.rglob(".aider.chat.history.md") if f.is_file()]
    out += [d for d in folder.rglob("storage") if d.is_dir() and opencode_storage_root(d)]
    return sorted(out)


def transcripts(paths: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """(files named on the command line, files found in the folders named): every `*.jsonl`, and
    the other agents' session files (`_other_agents`). An OpenCode storage/ folder named is
    itself a source."""
    from ctxview.importers.document_probe import opencode_storage_root

    given: list[Path] = []
    found: list[Path] = []
    for p in paths:
        p = p.expanduser()
        if p.is_dir() and opencode_storage_root(p) == p:
            found.append(p)
        elif p.is_dir():
            found.extend(sorted((f for f in p.rglob("*.jsonl") if f.is_file()), key=_order))
            found.extend(_other_agents(p))
        else:
            given.append(p)
    return given, found


def newest() -> Path | None:
    """The most recently written Claude Code or Codex session file, or None."""
    best: tuple[float, Path] | None = None
    for root in (claude_root(), codex_root()):
        if not root.is_dir():
            continue
        for f in root.rglob("*.jsonl"):
            if f.name.startswith("agent-"):
                continue  # a sub-agent of a session: follow the session itself
            try:
                mtime = f.stat().st_mtime
            except OSError:
                continue
            if best is None or mtime > best[0]:
                best = (mtime, f)
    return best[1] if best else None
