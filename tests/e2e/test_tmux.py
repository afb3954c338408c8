"""The viewer in a real terminal: tmux at a fixed size, the screen read with capture-pane."""

from __future__ import annotations

import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import CTXVIEW, GREETING, SmallStore, Tmux, insert_from_another_process

from ctxview.rules.ids import format_id

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
    ),
]

ID_ON_SCREEN = re.compile(r"#[0-9a-f]{4}\b")


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
