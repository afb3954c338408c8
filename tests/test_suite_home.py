"""The suite runs in a home of its own (tests/conftest.py, tests/suite_home.py): a test, and a
process it starts, that write to `~` or ctxview's default store write under the suite's
temporary home, and a run that changes the user's own ctxview state, ~/.claude or ~/.codex fails.
Checked with an inner pytest run under our conftest whose "user" is a fake home here (before,
`serve --demo` without `--store` wrote half-made demo sessions into ~/.local/state/ctxview)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

WRITES_HOME = """
import os, subprocess, sys
from pathlib import Path

def test_writes_home_and_the_default_store():
    (Path.home() / ".claude" / "projects").mkdir(parents=True)
    (Path.home() / ".claude" / "projects" / "s.jsonl").write_text("{}\\n")
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "ctxview"
    state.mkdir(parents=True, exist_ok=True)
    (state / "note").write_text("x")
    # A process started without --store: ctxview's default store.
    subprocess.run([sys.executable, "-m", "ctxview.cli", "demo", "--no-view",
                    "--pace", "0"], check=True, capture_output=True, timeout=120)
"""

WRITES_THE_USERS = """
import os
from pathlib import Path

def test_writes_the_users_own_store():
    # A path taken before the run began (a module-level constant, a path from a fixture file).
    Path(os.environ["SUITE_HOME_TEST_USER"], ".local", "state", "ctxview", "store.db").write_text("x")
"""


SEES_NO_CI = """
import subprocess

def test_a_started_process_is_told_nothing_of_the_ci_nor_of_geminis_settings():
    said = subprocess.run(["env"], capture_output=True, text=True, check=True).stdout
    names = {line.partition("=")[0] for line in said.splitlines()}
    assert not names & {"CI", "CONTINUOUS_INTEGRATION", "CI_JOB_ID", "GEMINI_API_KEY",
                        "GOOGLE_CLOUD_PROJECT"}, names
    assert "KEPT_BY_THE_SUITE" in names
"""


def inner_run(tmp_path: Path, test: str,
              **extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:  # fmt: skip
    """pytest on one test file under the suite's conftest, as a user whose home is here (and
    whose environment has `extra` too)."""
    user = tmp_path / "user"
    (user / ".local" / "state" / "ctxview").mkdir(parents=True)
    (user / ".local" / "state" / "ctxview" / "notes").write_text("the user's own")
    (user / ".claude").mkdir()
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("conftest.py", "suite_home.py"):
        shutil.copy(TESTS / name, suite / name)
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "test_inner.py").write_text(test)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CTXVIEW_"))}
    env.update(HOME=str(user), SUITE_HOME_TEST_USER=str(user), **extra)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(suite)], cwd=suite, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    return done, user


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text(errors="replace") if p.is_file() else ""
            for p in sorted(folder.rglob("*"))}  # fmt: skip


def test_what_tests_write_to_home_lands_in_the_suites_own(tmp_path: Path) -> None:
    done, user = inner_run(tmp_path, WRITES_HOME)
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree(user) == {".claude": "", ".local": "", ".local/state": "",
                          ".local/state/ctxview": "",
                          ".local/state/ctxview/notes": "the user's own"}  # fmt: skip


def test_a_run_that_changes_the_users_files_fails_saying_which(tmp_path: Path) -> None:
    done, user = inner_run(tmp_path, WRITES_THE_USERS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    store = user / ".local" / "state" / "ctxview" / "store.db"
    assert f"the run changed the user's own files: {store}" in done.stdout
    assert "changed during test_inner.py::test_writes_the_users_own_store" in done.stdout


def test_a_ci_services_variables_do_not_reach_the_agents_the_tests_start(tmp_path: Path) -> None:
    """Gemini CLI never starts its interactive UI where CI, CONTINUOUS_INTEGRATION or a CI_*
    variable is set (its `is-in-ci` check): the typed /compress test in tmux saw an empty screen
    under a CI service, which sets CI."""
    done, _ = inner_run(tmp_path, SEES_NO_CI, CI="true", CONTINUOUS_INTEGRATION="1",
                        CI_JOB_ID="7", GEMINI_API_KEY="the user's", GOOGLE_CLOUD_PROJECT="theirs",
                        KEPT_BY_THE_SUITE="1")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
