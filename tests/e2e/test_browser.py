"""The viewer in a real browser: `ctxview serve` and Debian's headless Chromium driven by
Playwright. The app draws on a canvas (xterm.js), so its text is read from the websocket frames.
The browser opens the URL serve prints (with its token); pages of other origins are refused."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from e2e_helpers import GREETING, Served, SmallStore

from ctxview.rules.ids import format_id

CHROMIUM = Path("/usr/bin/chromium")
DEMO_ID = re.compile(r"#10[0-9a-f]{2}\b")  # the demo's ids start at #1000
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]  # fmt: skip

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run apt-installs chromium)"
    ),
]


@pytest.fixture
def served(small_store: SmallStore) -> Iterator[tuple[Served, SmallStore]]:
    with Served("--store", str(small_store.path), "serve", "--session",
                small_store.session_id) as server:  # fmt: skip
        yield server, small_store


def local_only(page: sync_api.Page) -> None:
    """Whatever a page asks of another host (the served page asks none: test_serve_page.py) is
    refused: the test stays on this machine."""
    page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())


def frame_text(payload: str | bytes) -> str:
    """What the app drew, from a frame: textual-serve wraps the app's output in JSON."""
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    try:
        message = json.loads(text)
    except ValueError:
        return text
    if isinstance(message, list):
        return " ".join(m for m in message if isinstance(m, str))
    return text


def open_page(
    p: sync_api.Playwright, url: str, frames: list[str]
) -> tuple[sync_api.Browser, sync_api.Page]:
    """Debian's Chromium on `url`, every websocket frame's text appended to `frames` (the app
    is drawn on a canvas, so its text is in the frames, not the page's DOM)."""
    browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
    # A context of its own (not browser.new_page's), so a test can open a second page in it.
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    local_only(page)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(frame_text(f))))
    page.goto(url, wait_until="domcontentloaded")
    return browser, page


def test_served_transcript_in_chromium(served: tuple[Served, SmallStore], tmp_path: Path) -> None:
    """The URL `ctxview serve` prints (with its token) opens the app in Chromium."""
    server, store = served
    ids = [format_id(r) for r in store.rids]
    frames: list[str] = []
    with sync_api.sync_playwright() as p:
        browser, page = open_page(p, server.url, frames)
        try:
            seen = ""
            for _ in range(120):  # up to ~30 s on a busy machine
                page.wait_for_timeout(250)
                seen = "".join(frames)
                if GREETING in seen and any(i in seen for i in ids):
                    break
            assert GREETING in seen, "the transcript's text never reached the page"
            assert any(i in seen for i in ids), "no result id reached the page"
            page.wait_for_timeout(500)
            shot = tmp_path / "served.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 5_000
        finally:
            browser.close()


def test_served_demo_in_chromium(tmp_path: Path) -> None:
    """`ctxview serve --demo`: each tab runs its own demo; its ids reach the page, and a reload
    (no token in the address any more) works through the cookie of the first load."""
    frames: list[str] = []
    demo = ("--store", str(tmp_path / "demo.db"), "serve", "--demo", "--pace", "0")
    with Served(*demo) as server, sync_api.sync_playwright() as p:
        browser, page = open_page(p, server.url, frames)
        try:
            for _ in range(160):
                page.wait_for_timeout(250)
                if DEMO_ID.search("".join(frames)):
                    break
            assert DEMO_ID.search("".join(frames)), "the demo's ids never reached the page"
            frames.clear()
            again = page.goto(f"http://127.0.0.1:{server.port}/", wait_until="domcontentloaded")
            assert again is not None and again.status == 200
            for _ in range(160):
                page.wait_for_timeout(250)
                if DEMO_ID.search("".join(frames)):
                    break
            assert DEMO_ID.search("".join(frames)), "the reloaded tab got no app"
        finally:
            browser.close()
    assert (tmp_path / "demo.db").exists()


EVIL_PAGE = """<!doctype html><title>another site</title><script>
function tryWs(url) {
  return new Promise(done => {
    let ws;
    try { ws = new WebSocket(url); } catch (e) { done("threw"); return; }
    ws.onopen = () => { done("open"); ws.close(); };
    ws.onerror = () => done("error");
    setTimeout(() => done("timeout"), 8000);
  });
}
function tryFetch(url) {
  return fetch(url, {credentials: "include"}).then(r => r.text()).then(t => "read:" + t.length,
                                                                         () => "blocked");
}
</script>"""


class _EvilHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = EVIL_PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # quiet
        pass


def test_a_page_from_another_loopback_origin_cannot_read_the_session(
    served: tuple[Served, SmallStore],
) -> None:
    """The user has the app open (so holds its cookie, which a browser also sends to other ports of
    127.0.0.1); a page of another origin on this machine tries the websocket and the page."""
    server, _store = served
    evil = ThreadingHTTPServer(("127.0.0.1", 0), _EvilHandler)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    evil_url = f"http://127.0.0.1:{evil.server_address[1]}/"
    frames: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser, page = open_page(p, server.url, frames)
            try:
                for _ in range(120):
                    page.wait_for_timeout(250)
                    if GREETING in "".join(frames):
                        break
                assert GREETING in "".join(frames), "the user's own tab did not work"
                attacker = page.context.new_page()  # the same browser profile: the same cookies
                local_only(attacker)
                attacker.goto(evil_url, wait_until="load")
                ws = f"ws://127.0.0.1:{server.port}/ws"
                tries = {
                    "ws": attacker.evaluate(f"tryWs({ws!r})"),
                    "ws with a guessed token": attacker.evaluate(f"tryWs({ws + '?token=x'!r})"),
                    "ws via localhost": attacker.evaluate(
                        f"tryWs('ws://localhost:{server.port}/ws')"
                    ),
                    "page": attacker.evaluate(f"tryFetch('http://127.0.0.1:{server.port}/')"),
                }
            finally:
                browser.close()
    finally:
        evil.shutdown()
        evil.server_close()
    assert tries == {"ws": "error", "ws with a guessed token": "error", "ws via localhost": "error",
                     "page": "blocked"}, tries  # fmt: skip
    # Refused for its origin: Chromium sends the cookie to every port of 127.0.0.1 (same site).
    server.wait_log(f"refused GET /ws from 127.0.0.1: Requests from the page at {evil_url[:-1]}")


def test_a_dns_rebinding_page_is_refused_in_chromium(tmp_path: Path) -> None:
    """Even with --no-token: a name the attacker controls, resolved to 127.0.0.1 (Chromium's
    resolver rule stands in for the rebinding DNS server), reaches the port but is refused."""
    with Served("--store", str(tmp_path / "demo.db"), "serve", "--demo", "--no-token") as server:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(CHROMIUM), headless=True,
                args=[*FLAGS, "--host-resolver-rules=MAP rebind.test 127.0.0.1"],
            )  # fmt: skip
            try:
                page = browser.new_page()
                page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/]|rebind\.test[:/])"),
                           lambda route: route.abort())  # fmt: skip
                rebound = page.goto(f"http://rebind.test:{server.port}/")
                assert rebound is not None and rebound.status == 403
                assert "Host header" in page.inner_text("body")
                own = page.goto(f"http://127.0.0.1:{server.port}/")
                assert own is not None and own.status == 200
            finally:
                browser.close()
        server.wait_log("refused GET / from 127.0.0.1: The Host header 'rebind.test:")
