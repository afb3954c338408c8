"""The viewer in a real browser: `ctxview serve` and Debian's headless Chromium driven by
Playwright. The app draws on a canvas (xterm.js), so its text is read from the websocket frames."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ctxview.backend.rules.ids import format_id
from e2e_helpers import CTXVIEW, GREETING, SmallStore, free_port

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


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"ctxview serve did not listen on {port}")


@pytest.fixture
def served(small_store: SmallStore) -> Iterator[tuple[str, SmallStore]]:
    port = free_port()
    proc = subprocess.Popen(
        [CTXVIEW, "--store", str(small_store.path), "serve", "--port", str(port),
         "--session", small_store.session_id],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/", small_store
    finally:
        proc.terminate()  # the server we started, by its own handle
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def local_only(page: sync_api.Page) -> None:
    """The served page asks Google for a web font; the test stays on this machine."""
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
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    local_only(page)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(frame_text(f))))
    page.goto(url, wait_until="domcontentloaded")
    return browser, page


def test_served_transcript_in_chromium(served: tuple[str, SmallStore], tmp_path: Path) -> None:
    url, store = served
    ids = [format_id(r) for r in store.rids]
    frames: list[str] = []
    with sync_api.sync_playwright() as p:
        browser, page = open_page(p, url, frames)
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
    """`ctxview serve --demo`: each tab runs its own demo; its ids reach the page."""
    port = free_port()
    proc = subprocess.Popen(
        [CTXVIEW, "--store", str(tmp_path / "demo.db"), "serve", "--port", str(port), "--demo",
         "--pace", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    frames: list[str] = []
    try:
        wait_for_port(port, proc)
        with sync_api.sync_playwright() as p:
            browser, page = open_page(p, f"http://127.0.0.1:{port}/", frames)
            try:
                for _ in range(160):
                    page.wait_for_timeout(250)
                    if DEMO_ID.search("".join(frames)):
                        break
                assert DEMO_ID.search("".join(frames)), "the demo's ids never reached the page"
            finally:
                browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert (tmp_path / "demo.db").exists()
