"""Issue 10.1 and 10.3 in a real browser: `ctxview serve` in Debian's headless Chromium at
800×600, the screen read from xterm.js's own buffer (what the page draws on its canvas, cell by
cell). A result holding a long sentence, CJK, emoji (a skin-tone modifier, a joined family),
combining marks and a word wider than the page shows every character once, in order, wrapped
and never cropped (before src/ctxview/viewer/render/cells.py, the last words of the emoji rows were lost at
the edge: Rich and xterm.js counted those emoji differently); the session list's
columns fit the terminal, long titles (CJK among them) shortened with an ellipsis."""

from __future__ import annotations

import asyncio
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from characters_fixture import GUTTER, MIXED, SCROLLBAR, TITLES, build_store, squeeze
from e2e_helpers import Served
from rich.cells import cell_len
from test_browser import CHROMIUM, FLAGS, local_only

from ctxview.viewer.screens.sessions import fit_columns

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run apt-installs chromium)"
    ),
]

# Before the page's script runs: keep every object assigned a `terminal` (textual-serve's
# xterm.js Terminal is a property of its own client object, not a global).
HOOK = """
window.__terms = [];
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true,
                                             enumerable: true});
    window.__terms.push(value);
  },
});
"""
# The terminal's rows as text, and where each row's last non-blank cell ends (in cells).
READ = """() => {
  const t = window.__terms.find(x => x && x.buffer && x.buffer.active);
  if (!t) return null;
  const b = t.buffer.active, rows = [], ends = [];
  for (let y = 0; y < t.rows; y++) {
    const line = b.getLine(b.viewportY + y);
    if (!line) { rows.push(""); ends.push(0); continue; }
    rows.push(line.translateToString(true));
    let end = 0;
    for (let x = 0; x < t.cols; x++) {
      const c = line.getCell(x);
      if (c && c.getChars() && c.getChars().trim()) end = x + c.getWidth();
    }
    ends.push(end);
  }
  const screen = document.querySelector(".xterm-screen").getBoundingClientRect();
  return {cols: t.cols, rows, ends, screenRight: screen.right, pageWidth: innerWidth,
          scrollWidth: document.documentElement.scrollWidth};
}"""


def _read(page: sync_api.Page, ready: Any, tries: int = 160) -> dict[str, Any]:
    """The terminal once `ready(screen)` holds (a frame may be half drawn): polled, ~40 s."""
    got: dict[str, Any] | None = None
    for _ in range(tries):
        page.wait_for_timeout(250)
        got = page.evaluate(READ)
        if got and ready(got):
            page.wait_for_timeout(300)  # and once more, settled
            again = page.evaluate(READ)
            if ready(again):
                return again
    raise AssertionError("the page never showed it:\n" + "\n".join((got or {}).get("rows", [])))


def _open(p: sync_api.Playwright, url: str) -> tuple[sync_api.Browser, sync_api.Page]:
    browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
    page = browser.new_context(viewport={"width": 800, "height": 600}).new_page()
    local_only(page)
    page.add_init_script(HOOK)
    page.goto(url, wait_until="domcontentloaded")
    return browser, page


def _fits_the_page(got: dict[str, Any]) -> None:
    assert got["screenRight"] <= got["pageWidth"] + 1, "the terminal is wider than the page"
    assert got["scrollWidth"] <= got["pageWidth"], "the page scrolls sideways"


def test_every_character_of_a_result_in_chromium(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    sid, rid = asyncio.run(build_store(store))

    def block(got: dict[str, Any]) -> list[int]:
        """The result's rows: from its call line to the next message."""
        rows = got["rows"]
        start = next((i for i, r in enumerate(rows) if "echo mixed" in r), None)
        if start is None:
            return []
        end = next((i for i in range(start + 1, len(rows)) if "● user" in rows[i]), len(rows))
        return list(range(start, end))

    def whole(got: dict[str, Any]) -> bool:
        at = block(got)
        return bool(at) and "(the end)." in "".join(got["rows"][i] for i in at)

    with Served("--store", str(store), "serve", "--session", sid, "--jump", f"{rid:x}") as server, \
            sync_api.sync_playwright() as p:  # fmt: skip
        browser, page = _open(p, server.url)
        try:
            got = _read(page, whole)
            page.screenshot(path=str(tmp_path / "characters.png"))
        finally:
            browser.close()
    cols, rows, ends = got["cols"], got["rows"], got["ends"]
    _fits_the_page(got)
    assert 60 <= cols <= 120, cols  # 800 px of Roboto Mono: the page's terminal, not a default
    at = block(got)
    # Nothing under the scrollbar's columns, nothing past the terminal's edge.
    assert all(ends[i] <= cols - SCROLLBAR for i in at), [(rows[i], ends[i]) for i in at]
    body = "".join(rows[i][GUTTER:] for i in at)
    assert squeeze(MIXED) in squeeze(body), "\n".join(rows[i] for i in at)
    # The same characters, not a look-alike: combining marks stay separate code points.
    assert unicodedata.is_normalized("NFD", "".join(c for c in body if not c.isascii()))
    # Wrapped, not cropped: the 250-cell word takes as many rows as it needs.
    x_rows = [rows[i] for i in at if "xxxx" in rows[i]]
    assert len(x_rows) >= -(-250 // (cols - GUTTER - SCROLLBAR)), x_rows
    assert sum(r.count("x") for r in x_rows) == MIXED.count("x") == 250


def test_session_list_columns_fit_at_800x600(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    asyncio.run(build_store(store))

    def listed(got: dict[str, Any]) -> bool:
        text = "\n".join(got["rows"])
        return "Title" in text and "3 sessions" in text and text.count("ended") == 3

    with Served("--store", str(store), "serve") as server, sync_api.sync_playwright() as p:
        browser, page = _open(p, server.url)
        try:
            got = _read(page, listed)
            page.screenshot(path=str(tmp_path / "list.png"))
            # The table cannot be scrolled sideways: right arrow leaves every row where it was.
            page.keyboard.press("ArrowRight")
            page.keyboard.press("End")
            page.wait_for_timeout(500)
            after = _read(page, listed)
        finally:
            browser.close()
    cols, rows = got["cols"], got["rows"]
    _fits_the_page(got)
    assert after["rows"][: len(rows) - 1] == rows[: len(rows) - 1], "the list scrolled sideways"
    columns = fit_columns(cols)
    labels = [label for _, label, _ in columns]
    [head] = [r for r in rows if r.lstrip().startswith("Title")]
    # Every column kept is whole, in order (a column cut at the edge would lose its label's end).
    assert head.split() == labels, (head, labels)
    assert "Workspace" not in head and len(labels) >= 5, labels
    title_width = dict((k, w) for k, _, w in columns)["title"]
    for key, title in TITLES.items():
        [row] = [r for r in rows if r.startswith(" " + title[:2])]
        shown = row[1:].split("  ")[0]  # the title cell: up to the gap before Started
        assert cell_len(shown) <= title_width, (key, shown)
        if cell_len(title) > title_width:
            assert shown.endswith("…"), (key, row)
            assert title.startswith(shown[:-1]), (key, shown)
            assert cell_len(shown) >= title_width - 1, (key, shown)  # shrunk, not emptied
        else:
            assert shown == title, (key, row)
        # Each shown column's value is in the row whole, the last one too.
        assert re.search(r"  \d{4}-\d\d-\d\d \d\d:\d\d  +1  ended  +0", row), row
        if "source" in [k for k, _, _ in columns]:
            assert row.split()[-1] == "live", row
