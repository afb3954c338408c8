"""Issue 16 §4.3: a diff's lines keep their tint in a 256-colour terminal (tmux's default,
TERM=tmux-256color, no COLORTERM). The themes' tints are subtle truecolour shades that rich
rounded to black, the background: only the -/+ sign was coloured. Read with capture-pane -e,
which shows the SGR codes of every cell."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import CTXVIEW, Tmux

from ctxview.engine.session import Session
from ctxview.store import Writer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

SGR = re.compile(r"\x1b\[([0-9;]*)m")
CUBE = (0, 95, 135, 175, 215, 255)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path)
    yield t
    t.close()


async def _edit_store(store: Path, ws: Path) -> str:
    ws.mkdir()
    (ws / "cart.py").write_text("def total(items):\n    return sum(items)\n\n\nTAX = 0\n")
    writer = await Writer.open(store)
    s = await Session.start(writer, ws, title="tint", session_id="s-tint")
    await s.message("user", "Round the total.")
    await s.run("edit", {"path": "cart.py", "old_string": "return sum(items)",
                         "new_string": "return round(sum(items), 2)"})  # fmt: skip
    await writer.close()
    return s.id


def backgrounds(row: str) -> set[str]:
    """The backgrounds a captured row sets (`5;N` or `2;R;G;B`), in the order of its codes."""
    out = set()
    for params in SGR.findall(row):
        parts = params.split(";")
        for i, p in enumerate(parts):
            if p == "48" and i + 1 < len(parts):
                out.add(";".join(parts[i + 1 : i + 3 if parts[i + 1] == "5" else i + 5]))
    return out


def rgb(bg: str) -> tuple[int, int, int]:
    kind, *values = bg.split(";")
    if kind == "2":
        return int(values[0]), int(values[1]), int(values[2])
    n = int(values[0]) - 16
    assert 0 <= n < 216, f"background {bg} is not of the colour cube"
    return CUBE[n // 36], CUBE[n // 6 % 6], CUBE[n % 6]


@pytest.mark.parametrize("theme", ["ctxview-dark", "ctxview-light", "ctxview-contrast"])
def test_diff_lines_are_tinted_in_256_colours(tmux: Tmux, tmp_path: Path, theme: str) -> None:
    store = tmp_path / "store.db"
    sid = asyncio.run(_edit_store(store, tmp_path / "ws"))
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "TEXTUAL_COLOR_SYSTEM")}
    tmux.start([CTXVIEW, "--store", str(store), "view", "--session", sid, "--theme", theme],
               env, term=None)  # fmt: skip
    tmux.wait(lambda s: "+    return round(sum(items), 2)" in s, 60, "the diff")
    screen = tmux.screen(styles=True).split("\n")
    plain = [SGR.sub("", row) for row in screen]

    def row(text: str) -> str:
        return next(screen[i] for i, p in enumerate(plain) if text in p)

    context = backgrounds(row(" def total(items):"))
    added = backgrounds(row("+    return round(sum(items), 2)")) - context
    removed = backgrounds(row("-    return sum(items)")) - context
    assert all(";" in bg and bg.startswith("5;") for bg in context | added | removed), (
        "not a 256-colour terminal",
        context | added | removed,
    )
    assert added, f"the + line has no tint of its own: {backgrounds(row('+    return round'))}"
    assert removed, f"the - line has no tint of its own: {backgrounds(row('-    return sum'))}"
    r, g, b = rgb(added.pop())
    assert g > r and g >= b, (r, g, b)  # green
    r, g, b = rgb(removed.pop())
    assert r > g and r >= b, (r, g, b)  # red
