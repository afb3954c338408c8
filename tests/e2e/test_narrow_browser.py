"""Issue 10.3 and 10.8 in a real browser at 800×600: `ctxview serve` in Debian's headless
Chromium. The session list's footer keeps `q Quit` and `? Keys`, a key works before any click,
and the header sends no glyph the page's fonts lack (the Header's default U+2B58 drew a box)."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import Served, SmallStore
from test_browser import CHROMIUM, FLAGS, frame_text, local_only

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run apt-installs chromium)"
    ),
]


def _wait(page: sync_api.Page, frames: list[str], words: tuple[str, ...], tries: int = 120) -> str:
    seen = ""
    for _ in range(tries):
        page.wait_for_timeout(250)
        seen = "".join(frames)
        if all(w in seen for w in words):
            break
    return seen


def test_session_list_at_800x600(small_store: SmallStore, tmp_path: Path) -> None:
    frames: list[str] = []
    with Served("--store", str(small_store.path), "serve") as server, \
            sync_api.sync_playwright() as p:  # fmt: skip
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 800, "height": 600}).new_page()
            local_only(page)
            page.on("websocket",
                    lambda ws: ws.on("framereceived", lambda f: frames.append(frame_text(f))))  # fmt: skip
            page.goto(server.url, wait_until="domcontentloaded")
            seen = _wait(page, frames, ("Quit", "Keys", "Title"))
            assert "Quit" in seen and "Keys" in seen, "q Quit / ? Keys never reached the page"
            assert "\u2b58" not in seen, "the header's icon has no glyph in the page's fonts"
            page.screenshot(path=str(tmp_path / "narrow.png"))
            # No click first: the keys go to the app.
            frames.clear()
            page.keyboard.press("?")
            seen = _wait(page, frames, ("ctxview keys",), tries=40)
            assert "ctxview keys" in seen, "a key before the first click did not reach the app"
        finally:
            browser.close()
