"""Issue 10.1 in a real terminal: the result of characters_fixture (CJK, emoji with a skin-tone
modifier, joined emoji, combining marks, a 250-cell word) in tmux at 70×40 shows every character
once, in order. Rich counts a skin-tone modifier as 0 cells, tmux draws it as 2: before
src/ctxview/viewer/render/cells.py, a row holding modifiers lost its last word at the edge."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from characters_fixture import GUTTER, MIXED, build_store, squeeze
from e2e_helpers import CTXVIEW

TMUX = shutil.which("tmux")
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")]  # fmt: skip


def test_widths_are_counted_as_terminals_draw_them() -> None:
    from rich.cells import cell_len

    import ctxview.viewer  # noqa: F401  (the viewer sets the widths up when imported)

    assert cell_len("👍🏽") == 4 and cell_len("a👍🏽b") == 6  # tmux 3.3 and xterm.js: 2 + 2
    assert cell_len("e\u0301") == 1 and cell_len("漢") == 2 and cell_len("😀") == 2
    # A joined family is three emoji to xterm.js (tmux 3.3 joins it: a gap there, no loss).
    assert cell_len("👨\u200d👩\u200d👧") == 6


@pytest.mark.parametrize("size", [(70, 40)])
def test_every_character_of_a_result_in_tmux(tmp_path: Path, size: tuple[int, int]) -> None:
    assert TMUX is not None
    store = tmp_path / "store.db"
    sid, rid = asyncio.run(build_store(store))
    name = f"ctxview-chars-{uuid.uuid4().hex[:8]}"
    tmux = [TMUX, "-L", name]
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    cols, rows = size
    subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", str(cols),
                    "-y", str(rows), f"env TERM=xterm-256color {CTXVIEW} --store {store} view "
                    f"--session {sid} --jump {rid:x}"], check=True, env=env, timeout=30)  # fmt: skip

    def block(screen: list[str]) -> list[str]:
        start = next((i for i, r in enumerate(screen) if "echo mixed" in r), None)
        if start is None:
            return []
        end = next((i for i in range(start + 1, len(screen)) if "● user" in screen[i]),
                   len(screen))  # fmt: skip
        return screen[start:end]

    try:
        screen: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "w"],
                                    capture_output=True, text=True, timeout=10).stdout.split("\n")  # fmt: skip
            if "(the end)." in "".join(block(screen)):
                break
            time.sleep(0.1)
        at = block(screen)
        assert "(the end)." in "".join(at), "\n".join(screen)
        body = "".join(r[GUTTER:] for r in at)
        assert squeeze(MIXED) in squeeze(body), "\n".join(at)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10)
