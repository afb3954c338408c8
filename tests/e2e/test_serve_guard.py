"""`ctxview serve` refuses what is not the user's own browser tab: a real server process on a free
loopback port, spoken to with raw HTTP and websocket clients (aiohttp's). Before the guard, every
request here was answered, and `/ws` started an app on the store for anyone."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from e2e_helpers import GREETING, Served, _build, descendants

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("guard")
    (root / "store").mkdir()
    store = root / "store" / "store.db"
    session_id, _ = asyncio.run(_build(store, root / "ws"))
    with Served("--store", str(store), "serve", "--session", session_id) as server:
        yield server
    assert server.stdout == "", "serve wrote to stdout"


async def get(url: str, **kw: object) -> tuple[int, str, dict[str, str]]:
    jar = aiohttp.CookieJar(unsafe=True)  # keep cookies from an IP address
    method = str(kw.pop("method", "GET"))
    async with (
        aiohttp.ClientSession(cookie_jar=jar) as http,
        http.request(method, url, **kw) as r,  # type: ignore[arg-type]
    ):
        return r.status, await r.text(), dict(r.headers)


async def ws_status(url: str, **kw: object) -> int:
    """The websocket handshake's answer: 101 when it opened (then closed at once), else the
    refusal's status."""
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, **kw) as ws:  # type: ignore[arg-type]
                await ws.close()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def one_sentence(body: str) -> bool:
    return body.count("\n") == 1 and body.rstrip().endswith(".")


def test_the_printed_url_is_the_token_url(served: Served) -> None:
    assert re.fullmatch(rf"http://127\.0\.0\.1:{served.port}/\?token=[\w-]{{40,}}", served.url)
    status, body, headers = asyncio.run(get(served.url))
    assert status == 200, body
    cookie = headers["Set-Cookie"]
    assert f"ctxview-token-{served.port}={served.token}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    # The page's websocket URL carries a one-time ticket, not the token.
    ws_url = re.search(r'data-session-websocket-url="([^"]+)"', body)
    assert ws_url and re.fullmatch(rf"ws://127\.0\.0\.1:{served.port}/ws/[\w-]{{20,}}",
                                   ws_url.group(1))  # fmt: skip
    assert served.token not in body
    # Nothing lets another origin read the page (no CORS), nor frame it, nor get a Referer.
    assert not any(h.lower().startswith("access-control-") for h in headers)
    assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"


def test_a_missing_or_wrong_token_is_refused(served: Served) -> None:
    base = served.base
    wrong = "x" * len(served.token)
    for url in (f"{base}/", f"{base}/?token={wrong}", f"{base}/?token=",
                f"{base}/static/js/textual.js", f"{base}/download/abc"):  # fmt: skip
        status, body, headers = asyncio.run(get(url))
        assert status == 403, url
        assert one_sentence(body) and "token" in body, body
        assert "Set-Cookie" not in headers
    assert asyncio.run(get(f"{base}/", headers={"Cookie": f"ctxview-token-{served.port}={wrong}"}))[0] == 403  # fmt: skip
    assert asyncio.run(get(f"{base}/", headers={"Authorization": f"token {wrong}"}))[0] == 403
    served.wait_log("refused GET /static/js/textual.js from 127.0.0.1")
    # The other proofs of the right token: the cookie of the first load, the header.
    assert asyncio.run(get(f"{base}/static/js/textual.js", headers={"Cookie": f"ctxview-token-{served.port}={served.token}"}))[0] == 200  # fmt: skip
    assert asyncio.run(get(f"{base}/", headers={"Authorization": f"token {served.token}"}))[0] == 200  # fmt: skip
    assert served.token not in served.log().replace(served.url, ""), "the log repeats the token"


def test_the_websocket_needs_the_token(served: Served) -> None:
    ws = f"ws://127.0.0.1:{served.port}/ws"
    assert asyncio.run(ws_status(ws)) == 403
    assert asyncio.run(ws_status(f"{ws}?token={'y' * len(served.token)}")) == 403
    assert asyncio.run(ws_status(f"{ws}/not-a-ticket")) == 403
    served.wait_log("refused GET /ws from 127.0.0.1")


def test_a_foreign_origin_is_refused(served: Served) -> None:
    token = f"?token={served.token}"
    cookie = {"Cookie": f"ctxview-token-{served.port}={served.token}"}
    ws = f"ws://127.0.0.1:{served.port}/ws{token}"
    for origin in ("http://evil.test", f"http://127.0.0.1:{served.port + 1}",
                   f"http://localhost:{served.port + 1}", "null", f"https://127.0.0.1:{served.port}",
                   f"http://127.0.0.1.evil.test:{served.port}"):  # fmt: skip
        # Even with the user's cookie (a browser sends it cross-port: cookies ignore ports).
        assert asyncio.run(ws_status(ws, origin=origin, headers=cookie)) == 403, origin
        status, body, headers = asyncio.run(get(served.url, headers={"Origin": origin}))
        assert status == 403 and one_sentence(body) and origin in body, origin
        assert not any(h.lower().startswith("access-control-") for h in headers)
        # A state-changing request (or a CORS preflight) from there: refused the same way.
        for method in ("POST", "OPTIONS"):
            assert asyncio.run(get(served.url, method=method, headers={"Origin": origin}))[0] == 403  # fmt: skip
    served.wait_log(f"refused GET /ws from 127.0.0.1: Requests from the page at http://127.0.0.1:{served.port + 1}")  # fmt: skip
    # The served origin and its loopback equivalents are this server.
    for origin in (f"http://127.0.0.1:{served.port}", f"http://localhost:{served.port}",
                   f"http://[::1]:{served.port}"):  # fmt: skip
        assert asyncio.run(ws_status(ws, origin=origin)) == 101, origin


def test_a_foreign_host_is_refused(served: Served) -> None:
    ws = f"ws://127.0.0.1:{served.port}/ws?token={served.token}"
    for host in (f"evil.test:{served.port}", "evil.test", f"127.0.0.1:{served.port + 1}",
                 f"127.0.0.1.nip.io:{served.port}", f"localhost.evil.test:{served.port}", ""):  # fmt: skip
        status, body, _ = asyncio.run(get(served.url, headers={"Host": host}))
        assert status == 403 and one_sentence(body) and "Host" in body, host
        assert asyncio.run(ws_status(ws, headers={"Host": host})) == 403, host
    served.wait_log("refused GET / from 127.0.0.1: The Host header 'evil.test:")
    for host in (f"localhost:{served.port}", f"[::1]:{served.port}", f"LOCALHOST:{served.port}"):
        assert asyncio.run(get(served.url, headers={"Host": host}))[0] == 200, host


async def _read_app(served: Served) -> tuple[str, list[int]]:
    """Open a tab's websocket with the page's one-time ticket alone (no cookie); what the app
    drew, and the pids of the processes serve started for it."""
    status, body, _ = await get(served.url)
    assert status == 200
    found = re.search(r'data-session-websocket-url="([^"]+)"', body)
    assert found
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        url = f"{found.group(1)}?width=120&height=40"
        async with http.ws_connect(url, origin=served.base) as ws:
            seen, pids, end = b"", [], time.monotonic() + 30
            while time.monotonic() < end and GREETING.encode() not in seen:
                try:
                    msg = await ws.receive(timeout=1)
                except TimeoutError:
                    continue
                if msg.type == aiohttp.WSMsgType.BINARY:
                    seen += msg.data
                    pids = pids or descendants(served.proc.pid)
                elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    break
            await ws.close()
    # A ticket opens one websocket only.
    assert await ws_status(found.group(1), origin=served.base) == 403
    return seen.decode("utf-8", "replace"), pids


def test_the_page_ticket_opens_the_app_and_the_token_stays_in_serve(served: Served) -> None:
    seen, pids = asyncio.run(_read_app(served))
    assert GREETING in seen, "the app's screen never came through the ticket's websocket"
    assert pids, "no app process was seen"
    for pid in pids:  # a tab's processes hold no token: not in argv, not in the environment
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # it ended already
        assert served.token.encode() not in cmdline + environ
    assert served.token.encode() not in Path(f"/proc/{served.proc.pid}/cmdline").read_bytes()


def test_no_token_is_a_warned_choice_and_the_other_checks_hold(tmp_path: Path) -> None:
    with Served("--store", str(tmp_path / "demo.db"), "serve", "--demo", "--no-token") as served:
        assert served.url == f"http://127.0.0.1:{served.port}/"
        assert "warning: --no-token" in served.log()
        assert asyncio.run(get(served.url))[0] == 200
        assert asyncio.run(get(served.url, headers={"Host": f"evil.test:{served.port}"}))[0] == 403
        assert asyncio.run(get(served.url, headers={"Origin": "http://evil.test"}))[0] == 403
    with Served("--store", str(tmp_path / "demo.db"), "serve", "--demo",
                "--allow-host", "viewer.internal") as served:  # fmt: skip
        host = {"Host": f"viewer.internal:{served.port}"}
        assert asyncio.run(get(served.url, headers=host))[0] == 200
        origin = {**host, "Origin": f"http://viewer.internal:{served.port}"}
        assert asyncio.run(get(served.url, headers=origin))[0] == 200


def test_each_demo_tab_removes_its_temporary_folders(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    store = str(tmp_path / "demo.db")  # its own, never the user's
    with Served("--store", store, "serve", "--demo", "--pace", "0", env=env) as served:

        async def one_tab() -> None:
            async with aiohttp.ClientSession() as http:
                ws_url = f"ws://127.0.0.1:{served.port}/ws?token={served.token}&width=100&height=30"
                async with http.ws_connect(ws_url) as ws:
                    end = time.monotonic() + 30
                    while time.monotonic() < end and not list(temp.glob("*/*")):
                        await asyncio.sleep(0.1)
                    assert list(temp.iterdir()), "the demo tab made no temporary folder"
                    await ws.close()

        asyncio.run(one_tab())
        end = time.monotonic() + 20
        while time.monotonic() < end and list(temp.iterdir()):
            time.sleep(0.1)
        assert not list(temp.iterdir()), f"left behind: {sorted(p.name for p in temp.iterdir())}"
