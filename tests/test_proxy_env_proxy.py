"""The upstream reached as the environment says (HTTP_PROXY, NO_PROXY), and only the client's own
credentials reaching it: an entry of ~/.netrc is for the HTTP proxy, never the upstream (aiohttp's
`trust_env` sent a `default` entry to the upstream as `Authorization: Basic`, and failed every
request that carried its own `Authorization`)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from test_proxy import MESSAGES_BODY, Upstream, _base, upstream
from yarl import URL

from ctxview.proxy import env_proxy
from ctxview.proxy.server import Proxy

__all__ = ["upstream"]  # a fixture, used by name

CHAT_BODY = {"model": "gpt-x", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def netrc_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A ~/.netrc whose `default` entry matches every host, as some tools write it."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text("default login someone password hunter2\n")
    (home / ".netrc").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NETRC", raising=False)
    return "Basic " + base64.b64encode(b"someone:hunter2").decode()


@pytest.fixture
async def proxy(tmp_path: Path, upstream: tuple[Upstream, str]) -> AsyncIterator[Proxy]:
    p = Proxy(tmp_path / "store.db", upstream=upstream[1])
    await p.start()
    yield p
    await p.stop()


async def test_a_netrc_entry_never_reaches_the_upstream(
    netrc_default: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    upstream: tuple[Upstream, str],
) -> None:  # fmt: skip
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    up, url = upstream
    p = Proxy(tmp_path / "store.db", upstream=url)
    await p.start()
    try:
        async with aiohttp.ClientSession() as s:
            # A client with its own Authorization (OpenAI's SDKs, Codex): through, as it came.
            async with s.post(f"{_base(p)}/v1/chat/completions", json=CHAT_BODY,
                              headers={"Authorization": "Bearer sk-own"}) as resp:  # fmt: skip
                assert resp.status == 200, await resp.text()
                await resp.read()
            # One whose key is another header (Anthropic's): nothing added.
            async with s.post(f"{_base(p)}/v1/messages", json=MESSAGES_BODY,
                              headers={"x-api-key": "sk-ant-own"}) as resp:  # fmt: skip
                assert resp.status == 200, await resp.text()
                await resp.read()
    finally:
        await p.stop()
    assert [h.get("Authorization") for h in up.headers] == ["Bearer sk-own", None]
    assert all(netrc_default not in json.dumps(h) for h in up.headers)


class ForwardProxy:
    """An HTTP proxy on loopback: takes absolute-form requests, notes them, and passes them on."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []  # (URL asked for, Proxy-Authorization)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((str(request.url), request.headers.get("Proxy-Authorization")))
        raw = await request.read()
        keep = {k: v for k, v in request.headers.items()
                if k.lower() not in ("host", "proxy-authorization", "content-length")}  # fmt: skip
        async with (
            aiohttp.ClientSession(auto_decompress=False) as s,
            s.request(request.method, request.url, data=raw, headers=keep) as up,
        ):
            resp = web.StreamResponse(status=up.status)
            resp.content_type = up.content_type
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp


@pytest.fixture
async def forward() -> AsyncIterator[tuple[ForwardProxy, str]]:
    fp = ForwardProxy()
    app = web.Application(client_max_size=64 << 20)
    app.router.add_route("*", "/{tail:.*}", fp.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield fp, f"127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.mark.parametrize("bypass", [False, True])
async def test_the_upstream_is_reached_through_the_environments_proxy(
    bypass: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    upstream: tuple[Upstream, str], forward: tuple[ForwardProxy, str],
) -> None:  # fmt: skip
    """HTTP_PROXY with its credentials in the URL; NO_PROXY naming the upstream's host skips it.
    Read once for the upstream, at its first request, not again on each."""
    up, url = upstream
    fp, where = forward
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HTTP_PROXY", f"http://pxuser:pxpass@{where}")
    for name in ("http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    if bypass:
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    looked: list[URL] = []
    real = env_proxy.lookup

    def counted(u: URL) -> env_proxy.Route:
        looked.append(u)
        return real(u)

    monkeypatch.setattr(env_proxy, "lookup", counted)
    p = Proxy(tmp_path / "store.db", upstream=url)
    await p.start()
    try:
        async with aiohttp.ClientSession() as s:
            for _ in range(3):
                async with s.post(f"{_base(p)}/v1/messages", json=MESSAGES_BODY,
                                  headers={"x-api-key": "sk-ant-own"}) as resp:  # fmt: skip
                    assert resp.status == 200, await resp.text()
                    await resp.read()
    finally:
        await p.stop()
    assert len(up.bodies) == 3
    assert len(looked) == 1
    if bypass:
        assert fp.seen == []
    else:
        auth = "Basic " + base64.b64encode(b"pxuser:pxpass").decode()
        assert fp.seen == [(f"{url}/v1/messages", auth)] * 3
    assert all("Proxy-Authorization" not in h for h in up.headers)
    await asyncio.sleep(0)
