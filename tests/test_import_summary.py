"""Issue 16 §4.5: `ctxview import` says what it did. Its summary counts every session it filled,
the sub-agents' child sessions included (it said "into 17 sessions" where it made 22, "1 session"
for a file with 6), and an import with nothing to import makes no store (`import /etc/passwd`
left an empty one behind)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "import"
REALDATA = ROOT.parent / "shared" / "realdata"
CTXVIEW = str(Path(sys.executable).with_name("ctxview"))


def _import(store: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTXVIEW, "--store", str(store), "import", *map(str, paths)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def _said(run: subprocess.CompletedProcess[str]) -> int:
    found = re.search(r"into ([\d,]+) sessions?", run.stdout)
    assert found, run.stdout + run.stderr
    return int(found.group(1).replace(",", ""))


def _stored(store: Path) -> list[dict[str, object]]:
    run = subprocess.run([CTXVIEW, "--store", str(store), "sessions", "--json"],
                         capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return json.loads(run.stdout)  # type: ignore[no-any-return]


def test_the_summary_counts_inline_sidechains(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    run = _import(store, FIXTURES / "claude_inline_sidechain.jsonl")
    assert run.returncode == 0, run.stderr
    sessions = _stored(store)
    assert any(s["parent_session"] for s in sessions)  # the sidechain's child session
    assert _said(run) == len(sessions) >= 2
    again = _import(store, FIXTURES / "claude_inline_sidechain.jsonl")
    assert "into 0 sessions; 1 file had nothing new" in again.stdout, again.stdout


def test_the_summary_counts_every_session_of_a_folder(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    run = _import(store, FIXTURES)
    assert _said(run) == len(_stored(store))


@pytest.mark.realdata
@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is absent")
def test_the_summary_counts_sub_agents_of_real_sessions(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    run = _import(store, REALDATA)  # every format; 1.0.x files with inline sidechains among them
    sessions = _stored(store)
    assert sum(1 for s in sessions if str(s["id"]).startswith("cc-sc-")) >= 3
    assert _said(run) == len(sessions), run.stdout


@pytest.mark.parametrize("source", ["passwd", "text"])
def test_a_failed_import_makes_no_store(tmp_path: Path, source: str) -> None:
    if source == "passwd":
        path = Path("/etc/passwd")
        if not path.is_file():
            pytest.skip("no /etc/passwd here")
    else:
        path = tmp_path / "notes.jsonl"
        path.write_text('{"hello": "world"}\n{"type": "note"}\n')
    store = tmp_path / "state" / "ctxview" / "store.db"
    run = _import(store, path)
    assert run.returncode == 1
    assert run.stderr.strip().startswith("ctxview: ") and "neither" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert not store.exists() and not store.parent.exists(), list(tmp_path.rglob("*"))
