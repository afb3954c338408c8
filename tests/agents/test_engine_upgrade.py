"""The resident engine restarts on an upgrade of any agent's code: its stamp covers the agents'
folders (agents/claude_code/, agents/pi/, ...), not only agents/ itself. Since the move to
src/ctxview/ the hook engine lives in agents/claude_code/; a stamp of agents/ alone missed it."""

from __future__ import annotations

import os
from pathlib import Path

from ctxview.agents import daemon


def test_a_change_in_an_agents_folder_is_an_upgrade(tmp_path: Path) -> None:
    (tmp_path / "claude_code").mkdir()
    (tmp_path / "daemon.py").write_text("x = 1\n")
    hooks = tmp_path / "claude_code" / "hooks.py"
    hooks.write_text("y = 1\n")
    os.utime(tmp_path / "daemon.py", (1_000_000, 1_000_000))
    os.utime(hooks, (1_000_000, 1_000_000))
    before = daemon._code_stamp(tmp_path)
    os.utime(hooks, (2_000_000, 2_000_000))  # the hook engine upgraded, nothing else
    assert daemon._code_stamp(tmp_path) > before


def test_the_package_stamp_covers_the_hook_engine() -> None:
    agents = Path(daemon.__file__).resolve().parent
    hooks = agents / "claude_code" / "hooks.py"
    assert daemon._code_stamp() >= hooks.stat().st_mtime
