"""`ctxview export FILE.jsonl`: a transcript straight to HTML or Markdown in one process (issue
11's comparison with claude-code-log, which starts from the file too): the same page as
`ctxview import` then `ctxview export`, no store written anywhere, nothing left in the temp
folder, and one sentence for a missing file, a file of neither format and --all."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "import"
CLI = [sys.executable, "-m", "ctxview.cli"]
STAMP = re.compile(r"Exported by ctxview on [0-9: -]+UTC")


def ctxview(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    temp = tmp_path / "temp"
    temp.mkdir()
    # The default store must stay unwritten; the throwaway store goes in TMPDIR.
    return {**os.environ, "CTXVIEW_STORE": str(tmp_path / "default.db"), "TMPDIR": str(temp)}


@pytest.mark.parametrize("name", ["claude_session.jsonl", "codex_rollout.jsonl"])
@pytest.mark.parametrize("fmt", ["html", "md"])
def test_a_transcript_exports_as_its_import_would(tmp_path: Path, env: dict[str, str],
                                                  name: str, fmt: str) -> None:  # fmt: skip
    src = FIXTURES / name
    direct = ctxview("export", str(src), "--format", fmt, "-o", "direct", cwd=tmp_path, env=env)
    assert direct.returncode == 0, direct.stderr
    assert direct.stdout.startswith("Wrote "), direct.stdout
    assert not (tmp_path / "default.db").exists()
    assert list((tmp_path / "temp").iterdir()) == []  # the throwaway store is gone
    store = str(tmp_path / "two-step.db")
    assert ctxview("import", "--store", store, str(src), cwd=tmp_path, env=env).returncode == 0
    two = ctxview("export", "--store", store, "--format", fmt, "-o", "two", cwd=tmp_path, env=env)
    assert two.returncode == 0, two.stderr
    assert STAMP.sub("", (tmp_path / "direct").read_text()) == STAMP.sub(
        "", (tmp_path / "two").read_text())  # fmt: skip


def test_a_transcript_that_cannot_be_exported_says_why(tmp_path: Path,
                                                       env: dict[str, str]) -> None:  # fmt: skip
    missing = ctxview("export", str(tmp_path / "nope.jsonl"), cwd=tmp_path, env=env)
    assert (missing.returncode, missing.stderr.strip()) == (
        1, f"ctxview: There is no transcript file {tmp_path / 'nope.jsonl'}.")  # fmt: skip
    neither = ctxview("export", str(FIXTURES / "neither.jsonl"), cwd=tmp_path, env=env)
    assert neither.returncode == 1
    assert "neither a Claude Code nor a Codex transcript" in neither.stderr
    assert len(neither.stderr.strip().splitlines()) == 1, neither.stderr
    both = ctxview("export", str(FIXTURES / "claude_session.jsonl"), "--all", cwd=tmp_path,
                   env=env)  # fmt: skip
    assert both.returncode == 1 and both.stderr.startswith("ctxview: Give "), both.stderr
    assert not (tmp_path / "default.db").exists()
    assert list((tmp_path / "temp").iterdir()) == []


def test_a_command_imports_only_its_own_module(tmp_path: Path, env: dict[str, str]) -> None:
    """The one-shot export's start-up: `ctxview export` builds only its own sub-parser (every
    command's module was imported for each run)."""
    code = ("import sys\nfrom ctxview.cli import COMMANDS, main\n"
            f"main(['export', {str(FIXTURES / 'claude_session.jsonl')!r}, '-o', 'x.html'])\n"
            "print(sorted(m for m, _ in COMMANDS.values() "
            "if 'ctxview.commands.' + m in sys.modules))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['export']"
    assert (tmp_path / "x.html").exists()
