"""Issue 11 in the browser: `ctxview serve` in Debian's headless Chromium, ctrl+p, "Export
session", enter: the served app writes the session's HTML export (a complete, self-contained
page of that session) where $CTXVIEW_EXPORT_DIR says, and says so on the page."""

from __future__ import annotations

import os
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from e2e_helpers import GREETING, Served, SmallStore
from test_browser import CHROMIUM, open_page

from ctxview.rules.ids import format_id

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run apt-installs chromium)"
    ),
]


CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours and cursor moves between a row's words


def _wait(page: sync_api.Page, frames: list[str], words: tuple[str, ...], tries: int) -> str:
    seen = ""
    for _ in range(tries):
        page.wait_for_timeout(250)
        seen = CSI.sub("", "".join(frames))
        if all(w in seen for w in words):
            break
    return seen


class _Tags(HTMLParser):
    """Start tags, their ids and whether any tag fetches from the network."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.tags: list[str] = []
        self.remote: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        for key in ("src", "href"):
            if (a.get(key) or "").startswith(("http:", "https:", "//")) and tag != "a":
                self.remote.append(f"{tag} {key}={a[key]}")


def test_palette_export_through_serve(small_store: SmallStore, tmp_path: Path) -> None:
    out = tmp_path / "exports"
    out.mkdir()
    env = {**os.environ, "CTXVIEW_EXPORT_DIR": str(out)}
    ids = [format_id(r) for r in small_store.rids]
    frames: list[str] = []
    with Served("--store", str(small_store.path), "serve", "--session",
                small_store.session_id, env=env) as server, \
            sync_api.sync_playwright() as p:  # fmt: skip
        browser, page = open_page(p, server.url, frames)
        try:
            seen = _wait(page, frames, (GREETING,), 160)
            assert GREETING in seen, "the transcript never reached the page"
            frames.clear()
            page.keyboard.press("Control+p")
            _wait(page, frames, ("Search",), 80)
            page.screenshot(path=str(tmp_path / "palette.png"))
            page.keyboard.type("export")
            seen = _wait(page, frames, ("Export session",), 80)
            assert "Export session" in seen, "the palette offered no 'Export session'"
            page.wait_for_timeout(500)  # the palette's list settles on its best hit
            page.keyboard.press("Enter")
            # The export is a process of its own: up to ~2 minutes on a busy machine.
            seen = _wait(page, frames, ("Exported",), 480)
            assert "Exported" in seen, "the page never said the export was written"
            page.screenshot(path=str(tmp_path / "exported.png"))
        finally:
            browser.close()
    files = list(out.glob("*.html"))
    assert [f.name for f in files] == [f"{small_store.session_id}.html"]
    end = time.monotonic() + 10  # the notification follows the write; the file is whole
    text = files[0].read_text(encoding="utf-8")
    while not text.rstrip().endswith("</html>") and time.monotonic() < end:
        time.sleep(0.2)
        text = files[0].read_text(encoding="utf-8")
    assert text.lower().startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    page_tags = _Tags(text)
    assert "main" in page_tags.tags and page_tags.remote == []
    assert GREETING in text and "e2e session" in text
    for rid in ids:  # every result has its anchor
        assert rid.lstrip("#") in page_tags.ids, rid
