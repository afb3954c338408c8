"""Syntax colour in the exported HTML, as Chromium draws it: a keyword of a read, of a diff and
of a message's code fence is drawn in another colour than the text around it, in the light
scheme and in the dark one (the reader's system preference, emulated)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxview.cli import main
from ctxview.store import Writer
from ctxview.store.records import Body, Event

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]  # fmt: skip
SESSION = "sess-colour"

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run apt-installs chromium)"
    ),
]

CODE = "import os\n\n\ndef total(items):\n    return sum(i.price for i in items)\n"
DIFF = ("--- a/cart.py\n+++ b/cart.py\n@@ -1,2 +1,2 @@\n def total(items):\n"
        "-    return sum(i.price for i in items)\n+    return sum(i.price * i.qty for i in items)")  # fmt: skip
MESSAGE = "The fix:\n\n```python\ndef total(items):\n    return 0\n```\n"


async def _build(path: Path) -> None:
    w = await Writer.open(path)
    await w.create_session(SESSION, title="colour", workspace="/w", next_rid=0x1000,
                           started=1_764_000_000.0)  # fmt: skip
    t = 1_764_000_000.0
    shown = "[#1000 cart.py lines 1-5 of 5 sha 9f86d081]\n" + "\n".join(
        f"{n}: {line}" for n, line in enumerate(CODE.rstrip("\n").split("\n"), 1))  # fmt: skip
    diff = "[#1001 cart.py edited: +1 -1]\n" + DIFF
    events = [
        Event(ts=t, kind="call", tool="read", call_ref="c1", args='{"path": "cart.py"}'),
        Event(ts=t, kind="result", tool="read", call_ref="c1", rid=0x1000, rkind="full",
              path="cart.py", shown_chars=len(shown), stored_chars=len(CODE)),
        Event(ts=t, kind="call", tool="edit", call_ref="c2", args='{"path": "cart.py"}'),
        Event(ts=t, kind="result", tool="edit", call_ref="c2", rid=0x1001, rkind="edit",
              path="cart.py", shown_chars=len(diff), stored_chars=len(diff)),
        Event(ts=t, kind="message", role="assistant", text=MESSAGE),
    ]  # fmt: skip
    await w.append(SESSION, events, [Body(0x1000, shown, CODE), Body(0x1001, diff, diff)])
    await w.close()


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("colour")
    # In a thread of its own: playwright's sync API may already run an event loop in this one.
    worker = threading.Thread(target=asyncio.run, args=(_build(tmp / "store.db"),))
    worker.start()
    worker.join()
    out = tmp / "colour.html"
    assert main(["--store", str(tmp / "store.db"), "export", SESSION, "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


# For each coloured block: the colour of its first keyword (`def`, `return`, `import`: pygments'
# k/kn/kd classes) and of the block's own text, as computed.
COLOURS = """() => [...document.querySelectorAll('main pre')].map(pre => {
  const kw = pre.querySelector('.k, .kn, .kd');
  return {where: pre.closest('section').className, text: getComputedStyle(pre).color,
          keyword: kw ? getComputedStyle(kw).color : null, word: kw ? kw.textContent : null};
}).filter(x => x.keyword !== null)"""


def colours(browser: sync_api.Browser, page_file: Path, scheme: str) -> list[dict[str, str]]:
    ctx = browser.new_context(color_scheme=scheme)  # type: ignore[arg-type]
    page = ctx.new_page()
    page.goto(page_file.as_uri())
    assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (
        scheme == "dark")  # fmt: skip
    found: list[dict[str, str]] = page.evaluate(COLOURS)
    ctx.close()
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_keywords_are_drawn_in_their_own_colour(browser: sync_api.Browser, page_file: Path,
                                                scheme: str) -> None:  # fmt: skip
    found = colours(browser, page_file, scheme)
    # The read, the diff and the message's fence each hold a keyword.
    assert sorted(f["where"] for f in found) == ["msg assistant", "tool", "tool"], found
    for f in found:
        assert f["keyword"] != f["text"], f"{scheme}: {f['word']!r} drawn as plain text: {f}"


def test_the_dark_scheme_has_its_own_token_colours(browser: sync_api.Browser,
                                                   page_file: Path) -> None:  # fmt: skip
    light = colours(browser, page_file, "light")
    dark = colours(browser, page_file, "dark")
    assert [f["keyword"] for f in light] != [f["keyword"] for f in dark], (light, dark)
    assert light[0]["text"] != dark[0]["text"]
