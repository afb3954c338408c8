"""Issue 10.3 in a real terminal: `ctxview` in tmux at 80×24. The session list fits (no column
cut in half, no sideways scroll), its footer and the transcript's keep `q Quit` and `? Keys`."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_helpers import CTXVIEW, SmallStore

TMUX = shutil.which("tmux")
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")]  # fmt: skip


def test_80x24_list_and_transcript(small_store: SmallStore, tmp_path: Path) -> None:
    assert TMUX is not None
    name = f"ctxview-narrow-{os.getpid()}"
    tmux = [TMUX, "-L", name]
    env = {**os.environ, "TERM": "xterm-256color"}
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", "-s", name, CTXVIEW,
                    "--store", str(small_store.path)], check=True, env=env)  # fmt: skip

    def screen() -> list[str]:
        out = subprocess.run([*tmux, "capture-pane", "-p", "-t", name], capture_output=True,
                             text=True).stdout  # fmt: skip
        return out.split("\n")

    def wait(check: Callable[[list[str]], bool], what: str, timeout: float = 60) -> list[str]:
        end = time.monotonic() + timeout
        while True:
            rows = screen()
            if check(rows):
                return rows
            assert time.monotonic() < end, f"{what}:\n" + "\n".join(rows)
            time.sleep(0.1)

    def footer(rows: list[str]) -> str:
        return next((r for r in reversed(rows) if r.strip()), "")

    try:
        rows = wait(lambda r: "Title" in "\n".join(r) and "Quit" in footer(r), "the list")
        head = next(r for r in rows if "Title" in r)
        assert "State" in head and "Results" in head, head
        assert footer(rows).rstrip().endswith("q Quit  ? Keys"), footer(rows)
        assert all(len(r) <= 80 for r in rows)
        subprocess.run([*tmux, "send-keys", "-t", name, "Enter"], check=True)
        rows = wait(lambda r: "g Jump" in footer(r), "the transcript")
        assert footer(rows).rstrip().endswith("q Quit  ? Keys"), footer(rows)
        subprocess.run([*tmux, "send-keys", "-t", name, "q"], check=True)
        wait(lambda r: subprocess.run([*tmux, "has-session", "-t", name],
                                      capture_output=True).returncode != 0, "quit")  # fmt: skip
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
