"""The proxy in process against a scripted upstream on loopback (real HTTP both sides, a real
store): the three protocols recorded and reassembled, and its faults — upstream down, 4xx/5xx,
killed mid-stream, the client gone mid-stream, a locked or unwritable store, 10 MB bodies,
100 streams at once, bad input, callers without the secret."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import itertools
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from suite_home import leave_no_trace

from ctxview.agents import failures
from ctxview.context.requests import rebuild_stored
from ctxview.proxy.server import Proxy
from ctxview.store import Reader


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


MESSAGE_EVENTS = [
    _sse("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 50, "cache_read_input_tokens": 40,
                                        "cache_creation_input_tokens": 7, "output_tokens": 1}}}),
    _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Hel"}}),
    _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "lo"}}),
    _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    _sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}),
    _sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
        "type": "input_json_delta", "partial_json": '{"command": '}}),
    _sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
        "type": "input_json_delta", "partial_json": '"ls"}'}}),
    _sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
    _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                           "usage": {"output_tokens": 12}}),
    _sse("message_stop", {"type": "message_stop"}),
]  # fmt: skip


class Upstream:
    """A scripted model API: keeps each request's raw bytes; `hold` makes a stream wait after
    its first event until released; `cancelled` is set when a held stream's client left."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.arrived = asyncio.Event()
        self.hold = False
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.first_sent = asyncio.Event()
        self.die_mid_stream = False
        self.linger = False  # the whole stream sent, then the answer is held open
        self.think = False  # nothing answered until released (a model thinking)
        self.status = 200

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.bodies.append(raw)
        self.headers.append(dict(request.headers))
        self.arrived.set()
        if self.think:
            await self.release.wait()
        if self.status != 200:
            return web.json_response({"type": "error", "error": {"message": "nope"}},
                                     status=self.status)  # fmt: skip
        path = request.path
        if path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": 42})
        if path.endswith("/chat/completions"):
            return await self._chat(request)
        if not path.endswith("/v1/messages"):
            return web.Response(status=404, text="no such path")
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return web.json_response({"type": "error"}, status=400)
        if not body.get("stream"):
            return web.json_response({"id": "msg_2", "type": "message", "role": "assistant",
                                      "content": [{"type": "text", "text": "plain"}],
                                      "usage": {"input_tokens": 3, "output_tokens": 1}})  # fmt: skip
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for i, ev in enumerate(MESSAGE_EVENTS):
                await resp.write(ev)
                if i == 0:
                    self.first_sent.set()
                    if self.die_mid_stream:
                        assert request.transport is not None
                        request.transport.abort()
                        return resp
                    if self.hold:
                        await self.release.wait()
            if self.linger:
                await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        await resp.write_eof()
        return resp

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunks = [
            {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
            {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [
                {"index": 0, "delta": {"content": " there"}, "finish_reason": "stop"}]},
            {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [],
             "usage": {"prompt_tokens": 9, "completion_tokens": 2,
                       "prompt_tokens_details": {"cached_tokens": 4}}},
        ]  # fmt: skip
        for c in chunks:
            await resp.write(f"data: {json.dumps(c)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


@contextlib.asynccontextmanager
async def serving(handler: Any, **runner: Any) -> AsyncIterator[str]:
    """`handler` answering every path on a loopback port: its base URL."""
    app = web.Application(client_max_size=64 << 20)
    app.router.add_route("*", "/{tail:.*}", handler)
    run = web.AppRunner(app, **runner)
    await run.setup()
    site = web.TCPSite(run, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{run.addresses[0][1]}"
    finally:
        await run.cleanup()


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Upstream, str]]:
    up = Upstream()
    # The bytes as they came over the wire, content encoding and all.
    async with serving(up.handle, handler_cancellation=True, auto_decompress=False) as url:
        yield up, url


@pytest.fixture
async def proxy(tmp_path: Path, upstream: tuple[Upstream, str]) -> AsyncIterator[Proxy]:
    p = Proxy(tmp_path / "store.db", upstream=upstream[1])
    await p.start()
    yield p
    await p.stop()


def _base(p: Proxy) -> str:
    return f"http://127.0.0.1:{p.port}/{p.secret}"


MESSAGES_BODY = {"model": "claude-x", "max_tokens": 100, "stream": True,
                 "metadata": {"user_id": json.dumps({"session_id": "abc-123"})},
                 "system": [{"type": "text", "text": "You help.",
                             "cache_control": {"type": "ephemeral"}}],
                 "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
                 "messages": [{"role": "user", "content": "list files"}]}  # fmt: skip


async def _records(p: Proxy, session: str | None = None) -> list[Any]:
    await p.recorder.drain()
    async with await Reader.open(p.recorder.store) as r:
        if session is None:
            session = (await r.proxy_sessions())[0][0]
        return await r.proxy_records(session)


async def test_messages_stream_passes_chunk_by_chunk_and_is_reassembled(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    up, _ = upstream
    raw = json.dumps(MESSAGES_BODY).encode()
    async with aiohttp.ClientSession() as s, s.post(
        f"{_base(proxy)}/v1/messages?beta=true", data=raw,
        headers={"x-api-key": "sk-ant-SECRET", "content-type": "application/json",
                 "anthropic-version": "2023-06-01"}) as resp:  # fmt: skip
        got = await resp.read()
    assert resp.status == 200
    assert got == b"".join(MESSAGE_EVENTS)
    assert up.bodies == [raw]  # the bytes as they came
    assert up.headers[0]["x-api-key"] == "sk-ant-SECRET"  # forwarded, never stored
    [rec] = await _records(proxy, "cc-abc-123")
    assert rec.outcome == "complete" and rec.status == 200
    answer = json.loads(rec.answer)
    assert answer["content"] == [{"type": "text", "text": "Hello"},
                                 {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                  "input": {"command": "ls"}}]  # fmt: skip
    assert answer["stop_reason"] == "tool_use"
    assert json.loads(rec.usage) == {
        "input_tokens": 50,
        "cache_read_input_tokens": 40,
        "cache_creation_input_tokens": 7,
        "output_tokens": 12,
    }
    assert ["x-api-key", "[not kept]"] in json.loads(rec.request_headers)
    db = Path(proxy.recorder.store)
    assert b"sk-ant-SECRET" not in db.read_bytes() + Path(f"{db}-wal").read_bytes()
    # The viewer's reader rebuilds it (the `x` view and the context panel read these).
    async with await Reader.open(db) as r:
        [req] = rebuild_stored(await r.api_request_rows("cc-abc-123"))
    assert req.body["messages"] == MESSAGES_BODY["messages"]
    assert req.marks == [{"path": ["system", 0], "value": {"type": "ephemeral"}}]


async def test_count_tokens_and_plain_messages_pass_through(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    body = {**MESSAGES_BODY, "stream": False}
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{_base(proxy)}/v1/messages/count_tokens", json=body) as resp:
            assert await resp.json() == {"input_tokens": 42}
        async with s.post(f"{_base(proxy)}/v1/messages", json=body) as resp:
            assert (await resp.json())["content"] == [{"type": "text", "text": "plain"}]
    recs = await _records(proxy, "cc-abc-123")
    assert [r.protocol for r in recs] == ["anthropic-count-tokens", "anthropic-messages"]
    assert recs[0].api_n is None and recs[1].api_n is not None  # a count is no request made
    assert json.loads(recs[1].answer)["content"][0]["text"] == "plain"


async def test_chat_completions_from_a_plain_client(proxy: Proxy) -> None:
    body = {
        "model": "gpt-x",
        "stream": True,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hello"},
        ],
    }
    async with aiohttp.ClientSession() as s, s.post(
            f"{_base(proxy)}/v1/chat/completions", json=body,
            headers={"Authorization": "Bearer sk-SECRET"}) as resp:  # fmt: skip
        text = await resp.text()
    assert text.endswith("data: [DONE]\n\n")
    [rec] = await _records(proxy)
    assert rec.session.startswith("px-")
    answer = json.loads(rec.answer)
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "Hi there"}
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert json.loads(rec.usage)["prompt_tokens_details"]["cached_tokens"] == 4
    # The next request of the same conversation joins the same session.
    body["messages"] += [{"role": "assistant", "content": "Hi there"},
                         {"role": "user", "content": "more"}]  # fmt: skip
    async with aiohttp.ClientSession() as s, s.post(
            f"{_base(proxy)}/v1/chat/completions", json=body) as resp:  # fmt: skip
        await resp.read()
    recs = await _records(proxy, rec.session)
    assert len(recs) == 2
    async with await Reader.open(proxy.recorder.store) as r:
        reqs = rebuild_stored(await r.api_request_rows(rec.session))
    assert reqs[1].keep == 2  # the shared opening stored once
    from ctxview.proxy.record import rebuild

    assert rebuild(recs[1], reqs[1]) == body


async def test_without_the_secret_or_from_a_page_is_refused(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    up, _ = upstream
    async with aiohttp.ClientSession() as s:
        async with s.post(f"http://127.0.0.1:{proxy.port}/v1/messages", json={}) as resp:
            assert resp.status == 403
        wrong = proxy.secret[:-1] + ("y" if proxy.secret.endswith("x") else "x")  # 1 in 64 ends so
        async with s.post(f"http://127.0.0.1:{proxy.port}/{wrong}/v1/messages",
                          json={}) as resp:  # fmt: skip
            assert resp.status == 403
        async with s.post(f"{_base(proxy)}/v1/messages", json={},
                          headers={"Origin": "http://evil.example"}) as resp:  # fmt: skip
            assert resp.status == 403
        async with s.post(f"http://127.0.0.1:{proxy.port}/v1/messages/count_tokens", json={},
                          headers={"X-Ctxview-Secret": proxy.secret}) as resp:  # fmt: skip
            assert resp.status == 200
    assert len(up.bodies) == 1
    assert "x-ctxview-secret" not in {k.lower() for k in up.headers[0]}


async def test_malformed_json_and_unknown_paths_go_through_unchanged(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    up, _ = upstream
    bad = b'{"model": "x", "messages": [tru'
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{_base(proxy)}/v1/messages", data=bad,
                          headers={"content-type": "application/json"}) as resp:  # fmt: skip
            assert resp.status == 400  # the upstream judged it
        async with s.post(f"{_base(proxy)}/v1/unknown?x=1", data=b"\x00\xffbinary") as resp:
            assert resp.status == 404 and await resp.text() == "no such path"
        async with s.post(f"{_base(proxy)}/v1/messages", data=b"[1, 2]",
                          headers={"content-type": "text/plain"}) as resp:  # fmt: skip
            assert resp.status == 400
    assert up.bodies == [bad, b"\x00\xffbinary", b"[1, 2]"]
    recs = await _records(proxy, "px-unparsed")
    assert [bytes(r.body_raw) for r in recs] == up.bodies
    assert all(r.parsed == 0 and r.api_n is None for r in recs)
    assert recs[1].path == "/v1/unknown?x=1"


async def test_a_compressed_request_body_goes_as_it_came(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    # The proxy's own server must not undo a request's Content-Encoding: the header goes on to
    # the upstream, so the bytes must too. The recorder decodes its own copy.
    up, _ = upstream
    gz = gzip.compress(json.dumps(MESSAGES_BODY).encode())
    fake = b"not gzip at all"
    async with aiohttp.ClientSession() as s:
        for raw in (gz, fake):
            async with s.post(f"{_base(proxy)}/v1/messages", data=raw,
                              headers={"content-type": "application/json",
                                       "content-encoding": "gzip"}) as resp:  # fmt: skip
                await resp.read()
    assert up.bodies == [gz, fake]
    [rec] = await _records(proxy, "cc-abc-123")
    assert bytes(rec.body_raw or b"") in (b"", gz)
    [bad] = await _records(proxy, "px-unparsed")
    assert bytes(bad.body_raw) == fake and bad.parsed == 0


async def test_upstream_errors_are_the_upstreams_own_answer(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    up, _ = upstream
    for status in (429, 529):
        up.status = status
        async with aiohttp.ClientSession() as s, s.post(
                f"{_base(proxy)}/v1/messages", json=MESSAGES_BODY) as resp:  # fmt: skip
            assert resp.status == status
            assert (await resp.json())["error"]["message"] == "nope"
    recs = await _records(proxy, "cc-abc-123")
    assert [r.status for r in recs] == [429, 529]


async def test_upstream_down_is_a_502_with_one_sentence(tmp_path: Path) -> None:
    with_nothing = Proxy(tmp_path / "store.db", upstream="http://127.0.0.1:9")
    await with_nothing.start()
    try:
        async with aiohttp.ClientSession() as s, s.post(
                f"{_base(with_nothing)}/v1/messages", json=MESSAGES_BODY) as resp:  # fmt: skip
            assert resp.status == 502
            message = (await resp.json())["error"]["message"]
        assert message.startswith("The upstream http://127.0.0.1:9 could not be reached")
        [rec] = await _records(with_nothing, "cc-abc-123")
        assert rec.outcome == "upstream-failed" and rec.status == 502
    finally:
        await with_nothing.stop()


async def test_upstream_killed_mid_stream(proxy: Proxy, upstream: tuple[Upstream, str]) -> None:
    up, _ = upstream
    up.die_mid_stream = True
    async with aiohttp.ClientSession() as s, s.post(
            f"{_base(proxy)}/v1/messages", json=MESSAGES_BODY) as resp:  # fmt: skip
        with pytest.raises(aiohttp.ClientPayloadError):
            await resp.read()
    [rec] = await _records(proxy, "cc-abc-123")
    assert rec.outcome == "upstream-cut"
    assert json.loads(rec.answer)["id"] == "msg_1"  # what did arrive is kept


async def test_client_gone_mid_stream_cancels_the_upstream(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    up, _ = upstream
    up.hold = True
    s = aiohttp.ClientSession()
    resp = await s.post(f"{_base(proxy)}/v1/messages", json=MESSAGES_BODY)
    await resp.content.readany()  # the first event came through before the rest exists
    resp.close()
    await s.close()
    await asyncio.wait_for(up.cancelled.wait(), 10)
    [rec] = await _records(proxy, "cc-abc-123")
    assert rec.outcome == "cut"
    assert "client went away" in rec.note


async def test_a_client_that_leaves_after_the_end_event_got_a_complete_answer(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    # As Codex does: it reads up to the stream's own end event and closes while the upstream
    # still holds the response open. The client had the whole answer: nothing was cut.
    up, _ = upstream
    up.linger = True
    s = aiohttp.ClientSession()
    resp = await s.post(f"{_base(proxy)}/v1/messages", json=MESSAGES_BODY)
    seen = b""
    while b"message_stop" not in seen:
        seen += await resp.content.readany()
    resp.close()
    await s.close()
    await asyncio.wait_for(up.cancelled.wait(), 10)
    [rec] = await _records(proxy, "cc-abc-123")
    assert rec.outcome == "complete", rec.note
    assert json.loads(rec.answer)["stop_reason"] == "tool_use"


async def test_a_locked_store_never_delays_a_request(proxy: Proxy) -> None:
    # The store exists (one request recorded), then another process holds its write lock.
    async with aiohttp.ClientSession() as s, s.post(
            f"{_base(proxy)}/v1/messages/count_tokens", json=MESSAGES_BODY) as resp:  # fmt: skip
        await resp.read()
    await proxy.recorder.drain()
    lock = sqlite3.connect(proxy.recorder.store, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        async with aiohttp.ClientSession() as s, s.post(
                f"{_base(proxy)}/v1/messages", json=MESSAGES_BODY) as resp:  # fmt: skip
            assert await resp.read() == b"".join(MESSAGE_EVENTS)
        assert not proxy.recorder._idle.is_set()  # answered while the record waits
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    recs = await _records(proxy, "cc-abc-123")
    assert [r.protocol for r in recs] == ["anthropic-count-tokens", "anthropic-messages"]


async def test_an_unwritable_store_loses_the_record_not_the_request(tmp_path: Path,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    store = tmp_path / "not-a-dir" / "store.db"
    (tmp_path / "not-a-dir").write_text("a file where the store's folder should be")
    failures.clear(store)  # its fallback log is outside the test's folder: none from an earlier run
    p = Proxy(store, upstream=upstream[1])
    await p.start()
    try:
        async with aiohttp.ClientSession() as s, s.post(
                f"{_base(p)}/v1/messages", json=MESSAGES_BODY) as resp:  # fmt: skip
            assert await resp.read() == b"".join(MESSAGE_EVENTS)
        await p.recorder.drain()
        assert p.recorder.lost == 1
    finally:
        await p.stop()
    try:
        [loss] = [f for f in failures.read(store) if f["event"] == "proxy"]
        assert loss["error"].startswith("A proxied request was not recorded")
        assert loss["path"] == "/v1/messages"
    finally:
        leave_no_trace(store)  # no store to find after the test: its traces cleared here


async def test_a_10_mb_request_streams_through(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    up, _ = upstream
    body = {**MESSAGES_BODY, "messages": [{"role": "user", "content": "x" * (10 << 20)}]}
    raw = json.dumps(body).encode()
    async with aiohttp.ClientSession() as s, s.post(
            f"{_base(proxy)}/v1/messages", data=raw,
            headers={"content-type": "application/json"}) as resp:  # fmt: skip
        assert await resp.read() == b"".join(MESSAGE_EVENTS)
    assert up.bodies == [raw]
    assert "chunked" not in up.headers[0].get("Transfer-Encoding", "")
    assert up.headers[0]["Content-Length"] == str(len(raw))
    [rec] = await _records(proxy, "cc-abc-123")
    assert rec.body_bytes == len(raw) and rec.parsed == 1


async def test_a_chunked_body_goes_on_chunked_byte_for_byte(proxy: Proxy,
        upstream: tuple[Upstream, str]) -> None:  # fmt: skip
    """No Content-Length from the client: the forward frames it as chunks of its own (the body
    is written on the upstream's connection past aiohttp's per-piece wait, so its framing is
    the writer's)."""
    up, _ = upstream
    raw = json.dumps({**MESSAGES_BODY, "messages": [
        {"role": "user", "content": "y" * (3 << 20) + "\u00e9"}]}).encode()  # fmt: skip
    cuts = [0, 1, 70_000, 1 << 20, (1 << 20) + 3, len(raw)]

    async def pieces() -> AsyncIterator[bytes]:
        for a, b in itertools.pairwise(cuts):
            yield raw[a:b]

    async with aiohttp.ClientSession() as s, s.post(
            f"{_base(proxy)}/v1/messages", data=pieces(),
            headers={"content-type": "application/json"}) as resp:  # fmt: skip
        assert await resp.read() == b"".join(MESSAGE_EVENTS)
    assert up.bodies == [raw]
    assert up.headers[0].get("Transfer-Encoding") == "chunked"
    [rec] = await _records(proxy, "cc-abc-123")
    assert rec.body_bytes == len(raw) and rec.parsed == 1


async def test_100_concurrent_streams(proxy: Proxy) -> None:
    async def one(i: int, s: aiohttp.ClientSession) -> bytes:
        body = {**MESSAGES_BODY, "metadata": {"user_id": json.dumps({"session_id": f"s{i}"})}}
        async with s.post(f"{_base(proxy)}/v1/messages", json=body) as resp:
            return await resp.read()

    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as s:
        got = await asyncio.gather(*(one(i, s) for i in range(100)))
    assert all(g == b"".join(MESSAGE_EVENTS) for g in got)
    await proxy.recorder.drain()
    async with await Reader.open(proxy.recorder.store) as r:
        found = await r.proxy_sessions()
    assert len(found) == 100 and proxy.recorder.lost == 0
