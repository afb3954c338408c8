"""Where transcripts are: the files under the paths given, and the newest session on this machine."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
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
    """The most recently written session of any agent where it keeps them on this machine
    (`session_files`), or None."""
    best: tuple[float, Path] | None = None
    for f in session_files():
        try:
            mtime = max(os.stat(p).st_mtime for p in _written(f))
        except (OSError, ValueError):
            continue
        if best is None or mtime > best[0]:
            best = (mtime, f)
    return best[1] if best else None


def session_files() -> Iterator[Path]:
    """Each agent's own session files in the folders it keeps them in: Claude Code's and
    Codex's (as they read their folders' variables), Gemini CLI's chats, pi's sessions, Copilot
    CLI's session state, Cursor's agent transcripts, OpenCode's database. A sub-agent's file is
    not among them: its session's file is followed with it."""
    home = Path("~").expanduser()
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    yield from (f for f in claude_root().rglob("*.jsonl") if not f.name.startswith("agent-"))
    yield from codex_root().rglob("*.jsonl")
    yield from (home / ".gemini" / "tmp").glob("*/chats/session-*.json*")
    yield from (home / ".pi" / "agent" / "sessions").glob("*/*.jsonl")
    yield from (home / ".copilot" / "session-state").glob("*/events.jsonl")
    cursor = home / ".cursor" / "projects"
    yield from cursor.glob("*/agent-transcripts/*.jsonl")  # older: one file a session
    yield from cursor.glob("*/agent-transcripts/*/*.jsonl")  # `<id>/<id>.jsonl`
    if (db := data / "opencode" / "opencode.db").is_file():
        yield db


def _written(path: Path) -> list[Path]:
    """The files whose mtime says when the session at `path` was last written: an SQLite
    database's write-ahead log too (its writes land there until a checkpoint)."""
    wal = path.with_name(f"{path.name}-wal")
    return [path, wal] if path.suffix == ".db" and wal.exists() else [path]
