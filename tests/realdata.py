"""The real public transcripts of ../shared/realdata, for the tests that read them (skipped when
the folder is absent). It holds other agents' sessions too: a file joins the import tests once
an importer reads its format."""

from __future__ import annotations

from pathlib import Path

from ctxview.importers import formats
from ctxview.importers.detect import CLAUDE, CODEX, NotTranscript, detect

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"


def imported_transcripts() -> list[Path]:
    """Every real `.jsonl` file in a format ctxview imports, sub-agents' files last."""
    if not REALDATA.is_dir():
        return []
    return sorted((p for p in REALDATA.rglob("*.jsonl") if _imported(p)),
                  key=lambda p: (p.name.startswith("agent-"), str(p)))  # fmt: skip


def _imported(path: Path) -> bool:
    """A Claude Code or Codex transcript (the other agents' files: `other_agents_files`)."""
    try:
        return detect(path) in (CLAUDE, CODEX)
    except NotTranscript:
        return False


def other_agents_files() -> list[tuple[str, Path]]:
    """(format, path) of every real session source of Gemini CLI, OpenCode, pi, Copilot CLI,
    Cursor and aider here: JSONL files, Gemini's JSON documents, aider's histories, OpenCode's
    storage/ folders and databases, each as `detect` tells it."""
    if not REALDATA.is_dir():
        return []
    out: list[tuple[str, Path]] = []
    candidates = [p for p in REALDATA.rglob("*") if p.is_file() and not p.name.endswith(
        ("-wal", "-shm"))]  # fmt: skip
    candidates += [p for p in REALDATA.rglob("storage_v2") if p.is_dir()]
    for p in sorted(candidates):
        if p.is_file() and p.parent.parent.name == "storage_v2":
            continue  # one file of an OpenCode storage folder (the folder is the source)
        try:
            fmt = detect(p)
        except (NotTranscript, OSError):
            continue
        if fmt is not None and fmt in formats.AGENT_OF:
            out.append((fmt, p))
    return out
