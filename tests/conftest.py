"""Settings for the whole suite.

Hypothesis: the same examples on every run (derandomize: a property failing in CI fails for
everyone, not once in a while) and no per-example deadline nor too-slow check (a loaded 2-core
machine runs an example several times slower; its speed is not what the properties test).

A home of its own: before anything is collected, HOME, the XDG folders and CTXVIEW_STORE point
into a temporary folder, and what the user's own setup says to ctxview, Claude Code, Codex or
tmux is unset, so no test (nor a process it starts, which inherits the environment) can read or
write the user's store, sessions or configuration. The user's own ctxview state, ~/.claude and
~/.codex are listed before and after: a run that changed them fails, saying what changed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from suite_home import Listing, isolate, leave_no_trace, listing, own_places

settings.register_profile(
    "ctxview",
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ctxview")

# The user's own, from the environment we were given; ctxview's (small) is listed after each test.
_STATE, _AGENTS = own_places(dict(os.environ))
_PLACES = _STATE + _AGENTS
_BEFORE: Listing = {}
_STATE_NOW: Listing = {}
_DURING: list[str] = []  # the tests after which the user's ctxview state had changed
_HOME = Path(tempfile.mkdtemp(prefix="ctxview-suite-home-"))


@pytest.fixture(autouse=True)
def _socket_folder_left_clean(tmp_path: Path) -> Iterator[None]:
    """What a test's stores left in this user's socket folder goes with the test (a store that
    cannot exist, under a file, is its test's to clear: `leave_no_trace`)."""
    yield
    for store in tmp_path.rglob("*.db"):
        leave_no_trace(store)


def pytest_sessionstart(session: pytest.Session) -> None:
    _BEFORE.update(listing(_PLACES))
    _STATE_NOW.update(listing(_STATE))
    isolate(os.environ, _HOME)


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    now = listing(_STATE)
    if now != _STATE_NOW:
        _DURING.append(nodeid)
        _STATE_NOW.clear()
        _STATE_NOW.update(now)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    after = listing(_PLACES)
    changed = sorted(p for p in _BEFORE.keys() | after.keys() if _BEFORE.get(p) != after.get(p))
    shutil.rmtree(_HOME, ignore_errors=True)
    if changed:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "the run changed the user's own files: " + ", ".join(changed[:20])
        if _DURING:
            text += "; the ctxview state changed during " + ", ".join(_DURING[:10])
        if reporter is not None:
            reporter.write_line(text, red=True, bold=True)
        else:
            print(text)
