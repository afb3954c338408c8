"""The upstream reached as the environment says (HTTP_PROXY, NO_PROXY), and only the client's own
credentials reaching it: an entry of ~/.netrc is for the HTTP proxy, never the upstream (aiohttp's
`trust_env` sent a `default` entry to the upstream as `Authorization: Basic`, and failed every
request that carried its own `Authorization`)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from test_proxy import MESSAGES_BODY, Upstream, _base, serving, upstream
from yarl import URL

from ctxview.proxy import env_proxy
from ctxview.proxy.server import Proxy

__all__ = ["upstream"]  # a fixture, used by name

CHAT_BODY = {"model": "gpt-x", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                   "all_proxy", "NO_PROXY", "no_proxy", "NETRC")  # fmt: skip


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own, and no proxy named in the environment."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return path


async def _through(store: Path, url: str, *requests: tuple[str, Any, dict[str, str]]) -> None:
    """Each (path, JSON body, headers) through a proxy of `store` to `url`, answered 200."""
    p = Proxy(store, upstream=url)
    await p.start()
    try:
        async with aiohttp.ClientSession() as s:
            for path, body, headers in requests:
                async with s.post(f"{_base(p)}{path}", json=body, headers=headers) as resp:
                    assert resp.status == 200, await resp.text()
                    await resp.read()
    finally:
        await p.stop()


ANTHROPIC = ("/v1/messages", MESSAGES_BODY, {"x-api-key": "sk-ant-own"})


async def test_a_netrc_entry_never_reaches_the_upstream(
    home: Path, tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    # A `default` entry matches every host, as some tools write it.
    (home / ".netrc").write_text("default login someone password hunter2\n")
    (home / ".netrc").chmod(0o600)
    up, url = upstream
    # A client with its own Authorization (OpenAI's SDKs, Codex): through, as it came. One whose
    # key is another header (Anthropic's): nothing added.
    own = ("/v1/chat/completions", CHAT_BODY, {"Authorization": "Bearer sk-own"})
    await _through(tmp_path / "store.db", url, own, ANTHROPIC)
    assert [h.get("Authorization") for h in up.headers] == ["Bearer sk-own", None]
    assert all("hunter2" not in json.dumps(h) and "Basic" not in json.dumps(h) for h in up.headers)


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
    async with serving(fp.handle) as url:
        yield fp, url.removeprefix("http://")


@pytest.mark.parametrize("bypass", [False, True])
async def test_the_upstream_is_reached_through_the_environments_proxy(
    bypass: bool, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    upstream: tuple[Upstream, str], forward: tuple[ForwardProxy, str],
) -> None:  # fmt: skip
    """HTTP_PROXY with its credentials in the URL; NO_PROXY naming the upstream's host skips it.
    Read once for the upstream, at its first request, not again on each."""
    up, url = upstream
    fp, where = forward
    monkeypatch.setenv("HTTP_PROXY", f"http://pxuser:pxpass@{where}")
    if bypass:
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    looked: list[URL] = []
    real = env_proxy.lookup

    def counted(u: URL) -> env_proxy.Route:
        looked.append(u)
        return real(u)

    monkeypatch.setattr(env_proxy, "lookup", counted)
    await _through(tmp_path / "store.db", url, ANTHROPIC, ANTHROPIC, ANTHROPIC)
    assert len(up.bodies) == 3
    assert len(looked) == 1
    if bypass:
        assert fp.seen == []
    else:
        auth = "Basic " + base64.b64encode(b"pxuser:pxpass").decode()
        assert fp.seen == [(f"{url}/v1/messages", auth)] * 3
    assert all("Proxy-Authorization" not in h for h in up.headers)
