"""What reaches the screen, scrollbar and all: no character falls under the scrollbar at any
width (issue 10.1). The app's composed screen in Pilot, and a real terminal in tmux."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from store_fixture import STARTED
from viewer_helpers import block_by_rid, ready, settle

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp

DOTS = "." * 80
PLAN = "Before I present a complete plan, let me check the remaining files once more."
CJK = "汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字"
SPACE = re.compile(r"\s+")


async def _store(tmp: Path) -> tuple[Path, str, dict[str, int]]:
    ws = tmp / "ws"
    ws.mkdir()
    path = tmp / "store.db"
    ids: dict[str, int] = {}
    async with await Writer.open(path) as writer:
        s = await Session.start(writer, ws, title="wrap", session_id="s-wrap", started=STARTED)
        await s.message("assistant", PLAN, ts=STARTED + 1)
        # More than a screen: the scrollbar is drawn (a line under it would be lost).
        await s.message("user", "\n".join(f"filler {i}" for i in range(80)), ts=STARTED + 1)
        for name, text in (("dots", DOTS), ("cjk", CJK), ("plan", PLAN)):
            await s.insert("bash", {"command": f"echo {name}"}, text, ts=STARTED + 2)
            ids[name] = s.last.rid  # type: ignore[union-attr]
    return path, "s-wrap", ids


def squeeze(text: str) -> str:
    """Without whitespace and the cursor's gutter mark (a wrap breaks lines at spaces)."""
    return SPACE.sub("", text).replace("▌", "")


@pytest.mark.parametrize("width", [20, 37, 80, 81, 133, 250])
async def test_every_character_reaches_the_screen(tmp_path: Path, width: int) -> None:
    path, sid, ids = await _store(tmp_path)
    app = CtxviewApp(path, session=sid, theme="ctxview-dark", watch=False)
    async with app.run_test(size=(width, 60)) as pilot:
        view = await ready(pilot)
        for stored in (False, True):
            if stored:
                await pilot.press("m")
                await settle(pilot, view)
            for name, text in (("dots", DOTS), ("cjk", CJK), ("plan", PLAN)):
                view.move_to(block_by_rid(view, ids[name]), top=True)
                await settle(pilot, view)
                # The composed screen, scrollbar drawn over the view: what a person sees.
                rows = [s.text for s in app.screen._compositor.render_strips()]
                region = view.region
                # The transcript's columns only (not its scrollbar).
                columns = region.width - view.styles.scrollbar_size_vertical
                inside = "".join(r[region.x : region.x + columns] for r in rows)
                assert squeeze(text) in squeeze(inside), (width, stored, name, "\n".join(rows))


def test_eighty_dots_at_80_by_24_in_tmux(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    path, sid, _ = asyncio.run(_store(tmp_path))
    ctxview = str(Path(sys.executable).with_name("ctxview"))
    socket = f"ctxview-wrap-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket]
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "80", "-y",
                    "24", f"env TERM=xterm-256color {ctxview} --store {path} view --session "
                    f"{sid} --jump {ids_hex(path)}"],
                   check=True, env=env, timeout=30)  # fmt: skip

    def dots(screen: str) -> int:
        """The dots' result: its bracket line, then its body wrapped over two rows."""
        lines = screen.split("\n")
        at = next((i for i, line in enumerate(lines) if "echo dots" in line), None)
        return -1 if at is None else sum(line.count(".") for line in lines[at + 2 : at + 4])

    try:
        # Polled until drawn whole (a capture 0.3 s after the first dots could be a frame a
        # loaded machine had not finished laying out); 60 s bounds a hang.
        screen = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "w"], capture_output=True,
                                    text=True, timeout=10).stdout  # fmt: skip
            if dots(screen) == 80:
                break
            time.sleep(0.05)
        assert dots(screen) == 80, screen
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, timeout=10)


def ids_hex(path: Path) -> str:
    """The dots result's id (the first result of the store)."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        rid = conn.execute("SELECT min(rid) FROM events WHERE rid IS NOT NULL").fetchone()[0]
    return f"{rid:x}"
