"""Issue 16 §4.5: `ctxview serve`'s page asks nobody else for anything. It asked
fonts.googleapis.com for a font (offline it failed; online it told a third party that a session
was open), logged "WebSocket is still in CONNECTING state", had no icon and an empty title. In
headless Chromium: every request the page makes goes to the served origin, the console has no
error, the title is the session's, and an icon is served."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest
from e2e_helpers import GREETING, Served, SmallStore
from test_browser import CHROMIUM, FLAGS, frame_text

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run installs it)"),
]


def test_the_served_page_fetches_only_from_its_server(small_store: SmallStore,
                                                      tmp_path: Path) -> None:  # fmt: skip
    requests: list[str] = []
    problems: list[str] = []
    frames: list[str] = []
    with Served("--store", str(small_store.path), "serve", "--session",
                small_store.session_id) as server, sync_api.sync_playwright() as p:  # fmt: skip
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.on("request", lambda r: requests.append(r.url))
            # Anything for another host is recorded above, then never leaves this machine.
            page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda r: r.abort())
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)  # fmt: skip
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
            page.on("websocket", lambda ws: ws.on("framereceived",
                                                  lambda f: frames.append(frame_text(f))))  # fmt: skip
            page.goto(server.url, wait_until="domcontentloaded")
            for _ in range(120):  # up to ~30 s on a busy machine
                page.wait_for_timeout(250)
                if GREETING in "".join(frames):
                    break
            assert GREETING in "".join(frames), "the app never reached the page"
            page.wait_for_timeout(1000)  # the late requests (fonts, icon) and messages
            title = page.title()
            icon = page.evaluate("document.querySelector('link[rel=icon]')?.href ?? ''")
            got = page.request.get(icon or f"{server.base}/favicon.ico")  # the page's cookie
            served_icon = (got.status, got.headers.get("content-type", ""), got.body()[:200])
        finally:
            browser.close()
    network = [u for u in requests if u.startswith(("http:", "https:", "ws:", "wss:"))]
    origin = f"127.0.0.1:{server.port}/"
    elsewhere = [u for u in network if u.split("://", 1)[1][: len(origin)] != origin]
    assert not elsewhere, f"the page asked other hosts: {elsewhere}"
    fonts = [u for u in network if u.endswith(".ttf")]
    assert fonts, f"Roboto Mono came from nowhere: {network}"  # from the server's static files
    assert not problems, problems
    assert title == "e2e session · ctxview", title
    assert icon.startswith(server.base + "/"), icon
    status, kind, body = served_icon
    assert status == 200 and kind.startswith("image/svg+xml") and body.lstrip().startswith(b"<svg")


def test_the_page_is_titled_ctxview_without_a_session(small_store: SmallStore) -> None:
    with (
        Served("--store", str(small_store.path), "serve") as server,
        urllib.request.urlopen(server.url, timeout=30) as answer,
    ):
        page = answer.read().decode()
    assert "<title>ctxview</title>" in page
    assert "googleapis" not in page and "https://" not in page.split("-->", 1)[1]
