"""The exported HTML in a real browser (Debian's headless Chromium, Playwright): a stub's id
scrolls its target into view, folds open, a link crosses pages, the page works with JavaScript
off, nothing is fetched; the demo and a real Claude Code session; screenshots taken."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]  # fmt: skip
REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"
REAL = REALDATA / "claude-code-log" / "-Users-dain-workspace-coderabbit-review-helper"
REAL_ID = "cc-cb2e607c-c758-415a-8b45-c49e4631906a"
CLI = [sys.executable, "-m", "ctxview.cli"]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run apt-installs chromium)"
    ),
]


def ctxview(*args: str) -> None:
    subprocess.run([*CLI, *args], check=True, capture_output=True, timeout=180)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("export-browser")
    store = tmp / "demo.db"
    ctxview("demo", "--no-view", "--pace", "0", "--store", str(store))
    ctxview("--store", str(store), "export", "-o", str(tmp / "demo.html"))
    ctxview("--store", str(store), "export", "-o", str(tmp / "paged.html"), "--page-mb", "0.03")
    return tmp


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def new_page(browser: sync_api.Browser, *, js: bool = True, dark: bool = False
             ) -> tuple[sync_api.Page, list[str]]:  # fmt: skip
    ctx = browser.new_context(java_script_enabled=js, viewport={"width": 1280, "height": 800},
                              color_scheme="dark" if dark else "light")  # fmt: skip
    page = ctx.new_page()
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    return page, fetched


def in_view(page: sync_api.Page, element_id: str) -> bool:
    return bool(page.evaluate(
        """id => { const r = document.getElementById(id).getBoundingClientRect();
                   return r.bottom > 0 && r.top < window.innerHeight && r.height > 0; }""",
        element_id,
    ))  # fmt: skip


def until(page: sync_api.Page, check: Callable[[], object], what: str, timeout: float = 30) -> None:
    """Poll `check` until it holds (the page's hashchange handler opens and scrolls after the
    click returns: a fixed 300 ms wait was a loaded machine's race); fail after `timeout` s."""
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"{what}: not after {timeout} s"
        page.wait_for_timeout(50)


def click_stub(page: sync_api.Page) -> None:
    """The stub #100b (an unchanged re-read) leads to #1003: its id, clicked, brings #1003
    into view."""
    link = page.locator('div.bracket.stub a.id[href="#1003"]').first
    link.scroll_into_view_if_needed()
    assert not in_view(page, "1003")
    link.click()
    until(
        page,
        lambda: page.evaluate("location.hash") == "#1003" and in_view(page, "1003"),
        "#1003 in view",
    )


@pytest.mark.parametrize("js", [True, False], ids=["js-on", "js-off"])
def test_demo_links_and_folds(demo: Path, browser: sync_api.Browser, js: bool) -> None:
    page, fetched = new_page(browser, js=js)
    page.goto((demo / "demo.html").as_uri())
    assert "Fix: cart total wrong" in page.title()
    click_stub(page)
    # A folded result opens.
    fold = page.locator("details.more").first
    assert not fold.evaluate("d => d.open")
    fold.locator("summary").click()
    assert fold.evaluate("d => d.open")
    # The elided middle of the capped run opens in place, from the stored text.
    outer = page.locator("details.more:has(details.elision)").first  # the run is folded
    outer.locator("> summary").click()
    elision = outer.locator("details.elision").first
    elision.scroll_into_view_if_needed()
    elision.locator("> summary").click()
    assert elision.evaluate("d => d.open")
    assert elision.locator("pre").inner_text().count("\n") > 100
    # A link into the folded sub-agent opens it (the script, or the browser's own revealing).
    page.goto((demo / "demo.html").as_uri() + "#a1-1007")
    until(page, lambda: page.evaluate("document.getElementById('agent-1').open")
          and in_view(page, "a1-1007"), "the sub-agent open, #a1-1007 in view")  # fmt: skip
    assert all(u.startswith("file:") for u in fetched), fetched
    page.context.close()


def test_link_across_pages(demo: Path, browser: sync_api.Browser) -> None:
    pages = sorted(demo.glob("paged.p*.html"))
    assert len(pages) >= 3
    page, fetched = new_page(browser)
    # A page with a link to a result on another page (a stale link after the boundary, a
    # stub to an earlier read, the model naming an earlier id).
    found = None
    for p in pages:
        page.goto(p.as_uri())
        links = page.locator("main a.id[href*='.html#']:visible")
        for i in range(links.count()):
            href = links.nth(i).get_attribute("href") or ""
            if href.split("#")[0] != p.name:
                found = (links.nth(i), href)
                break
        if found:
            break
    assert found, "no visible link crosses pages"
    link, href = found
    target_file, anchor = href.split("#")
    link.scroll_into_view_if_needed()
    link.click()
    page.wait_for_url(f"**/{target_file}#{anchor}")
    until(page, lambda: in_view(page, anchor), f"#{anchor} in view")
    # The index lists the pages and the contents point into them.
    page.goto((demo / "paged.html").as_uri())
    page.locator("nav.toc li.boundary a").first.click()
    until(page, lambda: in_view(page, "b-1"), "#b-1 in view")
    assert all(u.startswith("file:") for u in fetched), fetched
    page.context.close()


def test_screenshots(demo: Path, browser: sync_api.Browser, tmp_path: Path) -> None:
    for dark in (False, True):
        page, _ = new_page(browser, dark=dark)
        page.goto((demo / "demo.html").as_uri())
        shot = tmp_path / f"demo-{'dark' if dark else 'light'}.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 20_000
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert bg == ("rgb(13, 17, 23)" if dark else "rgb(255, 255, 255)")  # the themes' own
        page.context.close()


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/realdata is not here")
def test_real_claude_code_session(browser: sync_api.Browser, tmp_path: Path) -> None:
    store = tmp_path / "real.db"
    ctxview("--store", str(store), "import", str(REAL))
    out = tmp_path / "real.html"
    ctxview("--store", str(store), "export", REAL_ID, "-o", str(out))
    for js in (True, False):
        page, fetched = new_page(browser, js=js)
        page.goto(out.as_uri())
        # An id deep in the page, clicked from the top (its bracket's own link), lands.
        link = page.locator("main > section.tool div.bracket a.id").last
        href = link.get_attribute("href")
        assert href and href.startswith("#")
        page.evaluate("window.scrollTo(0, 0)")
        page.goto(out.as_uri() + href)
        until(page, lambda p=page, h=href: in_view(p, h[1:]), f"{href} in view")
        # A link into the sub-agent (folded under its call) opens it and lands.
        agent = page.locator("main a[href^='#agent-']").first
        agent.scroll_into_view_if_needed()
        agent.click()

        def landed(page: sync_api.Page = page) -> bool:
            target = page.evaluate("location.hash").lstrip("#")
            return target.startswith("agent-") and in_view(page, target)

        until(page, landed, "the sub-agent in view")
        # The sub-agent under its Task call.
        assert page.locator("details.agent").count() >= 1
        assert all(u.startswith("file:") for u in fetched), fetched
        page.goto(out.as_uri())
        shot = tmp_path / f"real-{'js' if js else 'nojs'}.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 20_000
        page.context.close()
