"""The real public transcripts of ../shared/realdata, for the tests that read them (skipped when
the folder is absent). It holds other agents' sessions too: a file joins the import tests once
an importer reads its format."""

from __future__ import annotations

from pathlib import Path

from ctxview.importers.detect import NotTranscript, detect

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"


def imported_transcripts() -> list[Path]:
    """Every real `.jsonl` file in a format ctxview imports, sub-agents' files last."""
    if not REALDATA.is_dir():
        return []
    return sorted((p for p in REALDATA.rglob("*.jsonl") if _imported(p)),
                  key=lambda p: (p.name.startswith("agent-"), str(p)))  # fmt: skip


def _imported(path: Path) -> bool:
    try:
        return detect(path) is not None
    except NotTranscript:
        return False
