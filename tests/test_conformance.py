"""The conformance cases (conformance/*.json) through the runner and through the CLI."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxview.engine.conformance import CaseFileError, run_files

ROOT = Path(__file__).resolve().parents[1]
CASE_FILES = sorted((ROOT / "conformance").glob("*.json"))
# The installed console script, as a user runs it.
_SCRIPT = Path(sys.executable).parent / "ctxview"
CTXVIEW = [str(_SCRIPT) if _SCRIPT.exists() else shutil.which("ctxview") or "ctxview"]


def test_there_are_case_files() -> None:
    assert ROOT / "conformance" / "context.json" in CASE_FILES


def test_context_json_has_named_cases_covering_every_section() -> None:
    doc = json.loads((ROOT / "conformance" / "context.json").read_text(encoding="utf-8"))
    cases = doc["cases"]
    assert doc["spec"] == "3.0.0"
    assert len(cases) >= 90
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names are unique"
    assert all(n.replace("_", "").isalnum() and n == n.lower() for n in names)
    sections = {c["section"] for c in cases}
    for s in ("§1", "§2", "§3", "§4", "§5", "§6", "§7"):
        assert s in sections
    for d in range(1, 13):
        assert f"decision {d}" in sections, f"decision {d} has no case"


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.name for p in CASE_FILES])
async def test_every_case_passes(path: Path) -> None:
    out = io.StringIO()
    passed, failed = await run_files([path], out)
    assert failed == 0, out.getvalue()
    assert passed == len(json.loads(path.read_text(encoding="utf-8"))["cases"])


def test_cli_runs_context_json() -> None:
    done = subprocess.run([*CTXVIEW, "conformance", "conformance/context.json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    n = len(json.loads((ROOT / "conformance/context.json").read_text(encoding="utf-8"))["cases"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"{n} passed, 0 failed"


def _case_file(tmp_path: Path, expect: str) -> Path:
    doc = {
        "spec": "3.0.0",
        "about": "one passing and one failing case",
        "cases": [
            {"name": "passes", "section": "§1",
             "steps": [{"call": "t", "args": {}, "output": "x", "expect": "[#1000]\nx"}]},
            {"name": "fails_on_purpose", "section": "§1",
             "steps": [{"call": "t", "args": {}, "output": "x", "expect": expect}]},
        ],
    }  # fmt: skip
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_failing_case_is_printed_and_exits_non_zero(tmp_path: Path) -> None:
    path = _case_file(tmp_path, "[#1000]\nnot x")
    done = subprocess.run([*CTXVIEW, "conformance", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0
    assert "FAIL cases.json: fails_on_purpose (step 1)" in done.stdout
    assert "-not x" in done.stdout and "+x" in done.stdout  # the short diff
    assert done.stdout.strip().splitlines()[-1] == "1 passed, 1 failed"


async def test_runner_counts_a_failure(tmp_path: Path) -> None:
    out = io.StringIO()
    assert await run_files([_case_file(tmp_path, {"starts": "[#1001]"})], out) == (1, 1)
    assert "does not start with" in out.getvalue()


@pytest.mark.parametrize("content", [None, "{not json", '{"cases": 3}'])
def test_an_unreadable_case_file_is_one_sentence(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    done = subprocess.run([*CTXVIEW, "conformance", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("."), done.stderr
    assert "Traceback" not in done.stderr


async def test_runner_refuses_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError):
        await run_files([tmp_path / "missing.json"], io.StringIO())
