"""The viewer in a real terminal: tmux at a fixed size, the screen read with capture-pane."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ctxview.backend.rules.ids import format_id
from e2e_helpers import CTXVIEW, GREETING, SmallStore, insert_from_another_process

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
    ),
]

ID_ON_SCREEN = re.compile(r"#[0-9a-f]{4}\b")


class Tmux:
    """One tmux server of our own (its own socket), one session at 120x40."""

    def __init__(self, tmp: Path) -> None:
        self.socket = f"ctxview-e2e-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, check=check, timeout=30)  # fmt: skip

    def start(self, command: list[str]) -> None:
        env = {**os.environ, "TERM": "xterm-256color"}
        env.pop("TMUX", None)
        shell_line = shlex.join(command)  # quoted: a bare #1a2b would start a comment
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "e2e",
             "-x", "120", "-y", "40", f"env TERM=xterm-256color {shell_line}"],
            check=True, env=env, timeout=30,
        )  # fmt: skip

    def screen(self) -> str:
        done = self.run("capture-pane", "-p", "-t", "e2e", check=False)
        return done.stdout

    def alive(self) -> bool:
        return self.run("has-session", "-t", "e2e", check=False).returncode == 0

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "e2e", *keys)

    def wait(self, check: Callable[[str], bool], timeout: float, what: str) -> str:
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.01)  # capture-pane itself takes a few ms
        raise AssertionError(f"{what} not on screen after {timeout} s; the screen:\n{screen}")

    def wait_gone(self, timeout: float, message: str) -> None:
        end = time.monotonic() + timeout
        while self.alive() and time.monotonic() < end:
            time.sleep(0.1)
        assert not self.alive(), message

    def close(self) -> None:
        self.run("kill-server", check=False)  # only our own server, on our own socket


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path)
    yield t
    t.close()


def test_view_jump_then_a_result_from_another_process_arrives(
    tmux: Tmux, small_store: SmallStore
) -> None:
    target = format_id(small_store.rids[0])
    tmux.start([CTXVIEW, "--store", str(small_store.path), "view", "--jump", target])
    screen = tmux.wait(lambda s: target in s and "greet.py" in s, 60, f"the jump to {target}")
    assert GREETING in screen
    tmux.keys("End")  # back to the live tail, so the new row is drawn where we look
    # The tail is on screen (a fixed 0.3 s let a loaded machine's first insert land unseen).
    tail = "The greeting is built with an f-string."
    tmux.wait(lambda s: tail in s, 60, "the end of the transcript")

    delays = []
    for n in range(5):
        marker = f"arrived-{n}-{uuid.uuid4().hex[:6]}"
        committed = insert_from_another_process(small_store, marker)
        # 30 s bounds a hang; the delays printed below are the measure of speed.
        screen = tmux.wait(lambda s, m=marker: m in s, 30, "the inserted result")
        delays.append(time.time() - committed)
        # Its id, the next one, arrives with it.
        assert format_id(small_store.rids[-1] + 1 + n) in screen
    delays.sort()
    print(
        f"commit to tmux screen: median {delays[2] * 1000:.0f} ms, max {delays[-1] * 1000:.0f} ms"
    )

    tmux.keys("q")
    tmux.wait_gone(30, "q did not quit the app")


def test_demo_runs_in_the_terminal(tmux: Tmux, tmp_path: Path) -> None:
    store = tmp_path / "demo" / "store.db"
    tmux.start([CTXVIEW, "--store", str(store), "demo", "--pace", "0"])
    screen = tmux.wait(lambda s: len(set(ID_ON_SCREEN.findall(s))) >= 3, 60, "three result ids")
    assert "Traceback" not in screen
    tmux.keys("q")
    tmux.wait_gone(30, "q did not quit the demo")
    assert store.exists()
