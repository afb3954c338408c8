"""The proxy itself: listens on 127.0.0.1, forwards each request to its upstream as it comes
(the body streamed through, not buffered), streams the answer back chunk by chunk as it
arrives, and spools what it saw (`recorder.py`) for the recorder process, which never holds a
request up.

Who may use it: a request must carry the proxy's secret, first in its path (the base URL the
proxy prints, `http://127.0.0.1:PORT/<secret>`, works for any client that takes a base URL)
or in an `X-Ctxview-Secret` header; a request with an `Origin` (a web page's) is refused."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import payload, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_writer import StreamWriter
from yarl import URL

from ctxview.proxy import headers as hdr
from ctxview.proxy import heap, protocols
from ctxview.proxy.answers import Assembler
from ctxview.proxy.env_proxy import EnvProxies
from ctxview.proxy.record import Exchange
from ctxview.proxy.recorder import Recorder, Sink
from ctxview.proxy.rewrite import Rewriter

CONNECT_TIMEOUT = 30.0  # seconds to reach the upstream; an answer itself may take its time
CHUNK = 1 << 16
# A client's body is read ahead up to twice this before the server stops reading its socket
# (aiohttp's 64 KB paused and resumed it 38 times for a 10 MB body; bench_proxy: 10 MB
# paced, added to the first byte p50, about 8.4 ms before and 3.4 ms after). At most about 2 MB
# a connection waits in it, and only while the upstream reads slower than the client sends.
READ_BUFSIZE = 1 << 20
# What one read of a client's socket takes: asyncio's 256 KB read a 10 MB body in 40 reads, each
# a wakeup, a parse and a hand-over, and so more CPU taken from an upstream on the same cores
# (bench_proxy_floor: 10 MB, first byte, ~1 ms less added, the proxy's CPU 15 -> 11 ms).
READ_SIZE = 1 << 20
DRAIN_AT = 1 << 20  # bytes waiting on the upstream's socket before the forward waits for it
THREAD_REWRITE = 256 << 10  # a body this big is rewritten off the event loop


def new_secret() -> str:
    return secrets.token_urlsafe(24)


@dataclass
class Endpoint:
    port: int
    secret: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.secret}"

    def variables(self) -> dict[str, str]:
        """The base-URL variables a client reads (Anthropic's SDKs, OpenAI's)."""
        return {"ANTHROPIC_BASE_URL": self.base, "OPENAI_BASE_URL": f"{self.base}/v1"}


class _Decoder:
    """The answer's content-encoding undone for the recorder (the client gets the bytes as
    they came)."""

    def __init__(self, encoding: str) -> None:
        enc = encoding.strip().lower()
        self.d: Any = None
        self.failed = enc not in ("", "identity", "gzip", "x-gzip", "deflate")
        if enc in ("gzip", "x-gzip"):
            self.d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self.d = zlib.decompressobj()

    def __call__(self, chunk: bytes) -> bytes:
        if self.failed:
            return b""
        if self.d is None:
            return chunk
        try:
            return bytes(self.d.decompress(chunk))
        except zlib.error:
            self.failed = True
            return b""


class Proxy:
    def __init__(self, store: Path, *, upstream: str | None = None, port: int = 0,
                 secret: str | None = None, workspace: str = "",
                 rewriter: Rewriter | None = None,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        """`clock`: the wall clock a request's start is recorded by (a test of the cache's
        lifetime gives its own rather than wait five minutes)."""
        self.clock = clock
        self.upstream = upstream.rstrip("/") if upstream else None
        self.rewriter = rewriter or Rewriter()
        self.port = port
        self.secret = secret or new_secret()
        self.recorder = Recorder(store, workspace=workspace)
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None
        self._env_proxies = EnvProxies()

    @property
    def active(self) -> int:
        """Requests in flight (the bench and the tests read it)."""
        return self.recorder.active

    async def start(self) -> Endpoint:
        heap.keep_freed_buffers()  # each request's chunks into pages already held
        await self.recorder.start()
        self._client = aiohttp.ClientSession(
            auto_decompress=False,
            trust_env=False,  # the environment's proxy is looked up once (`env_proxy.py`)
            cookie_jar=aiohttp.DummyCookieJar(),
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=CONNECT_TIMEOUT, connect=CONNECT_TIMEOUT
            ),
        )
        app = web.Application(client_max_size=0)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        # The handler is cancelled when its client goes away: the upstream request with it.
        # auto_decompress off: the body goes on with its Content-Encoding header, so it must
        # go as it came (the recorder decodes its own copy).
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None,
                                     auto_decompress=False, read_bufsize=READ_BUFSIZE)  # fmt: skip
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the port it was given (0: a free one)
        return Endpoint(self.port, self.secret)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._client is not None:
            await self._client.close()
        await self.recorder.stop()

    def _authorized(self, request: web.Request) -> str | None:
        """The path after the secret, or None when the request does not carry it."""
        path = request.raw_path.split("?", 1)[0]
        prefix = f"/{self.secret}"
        if hmac.compare_digest(path[: len(prefix)].encode(), prefix.encode()) and (
            len(path) == len(prefix) or path[len(prefix)] == "/"
        ):
            return path[len(prefix) :] or "/"
        given = request.headers.get(hdr.SECRET_HEADER, "")
        if given and hmac.compare_digest(given.encode(), self.secret.encode()):
            return path
        return None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        t0 = time.perf_counter()
        transport = request.transport
        if getattr(transport, "max_size", READ_SIZE) < READ_SIZE:  # asyncio's selector transport
            transport.max_size = READ_SIZE  # type: ignore[union-attr]
        if "Origin" in request.headers:
            return _refuse(403, "The ctxview proxy does not answer web pages.")
        path = self._authorized(request)
        if path is None:
            return _refuse(403, "The ctxview proxy answers only requests that carry its secret "
                                "(the base URL it printed).")  # fmt: skip
        if request.headers.get("Upgrade", "").lower() == "websocket":
            # Nothing recordable passes a websocket: the client falls back to HTTP.
            return _refuse(404, "The ctxview proxy does not carry websockets; use HTTP.")
        query = request.raw_path.partition("?")[2]
        forwarded = path + (f"?{query}" if query else "")
        protocol = protocols.detect(request.method, path)
        upstream = self.upstream or protocols.default_upstream(protocol, path)
        pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers]
        ex = Exchange(method=request.method, path=forwarded, upstream=upstream,
                      protocol=protocol, request_headers=pairs, body=b"",
                      started=self.clock())  # fmt: skip
        body = self.recorder.begin(ex)  # the body spooled chunk by chunk as it is forwarded
        try:
            return await self._forward(request, ex, body, t0)
        except asyncio.CancelledError:
            if ex.answer is not None and ex.answer.complete:
                # A client may close once it has the stream's own end event (Codex does), while
                # the upstream still holds the response open: it had the whole answer.
                ex.note = "The client closed after the answer's end event."
            else:
                ex.outcome = "cut"
                ex.note = (
                    "The client went away before the answer ended; the upstream request "
                    "was cancelled."
                )
            raise
        finally:
            if ex.total_ms is None:
                ex.total_ms = (time.perf_counter() - t0) * 1000
            self.recorder.finish(body, ex)

    async def _forward(self, request: web.Request, ex: Exchange, body: Sink,
                       t0: float) -> web.StreamResponse:  # fmt: skip
        assert self._client is not None

        async def stream() -> AsyncIterator[bytes]:
            async for chunk in request.content.iter_any():
                body.extend(chunk)
                yield chunk
            # An upstream slow to answer (a model thinking) does not keep the body from the spool.
            asyncio.get_running_loop().call_later(self.recorder.hold_seconds, body.release)

        has_body = request.body_exists
        url = URL(f"{ex.upstream}{ex.path}", encoded=True)
        headers = hdr.upstream_headers(ex.request_headers)
        data: Any = _Forwarded(stream()) if has_body else None
        if has_body and self.rewriter.applies(ex.protocol):
            # Elision and cache marks need the whole body: it is read, changed, then sent.
            data = await self._rewritten(request, ex, body)
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(data))))
        try:
            via, via_auth = await self._env_proxies.route(url)
            via_headers = None
            if via_auth is not None:  # the tunnel's request carries it, or else the request
                if url.scheme == "https":
                    via_headers = {"Proxy-Authorization": via_auth}
                else:
                    headers = [*headers, ("Proxy-Authorization", via_auth)]
            up = await self._client.request(
                ex.method, url, headers=headers,
                data=data, allow_redirects=False, proxy=via, proxy_headers=via_headers,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )  # fmt: skip
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            ex.outcome, ex.status = "upstream-failed", 502
            # What the client sent is recorded all the same (the upstream never read it).
            with contextlib.suppress(Exception):
                async for chunk in request.content.iter_any():
                    body.extend(chunk)
            ex.note = f"The upstream {ex.upstream} could not be reached ({_reason(exc)})."
            return _refuse(502, ex.note)
        async with up:
            ex.status = up.status
            out_pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in up.raw_headers]
            ex.response_headers = out_pairs
            resp = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in hdr.client_headers(out_pairs):
                resp.headers.add(k, v)
            assembler = Assembler(ex.protocol, up.headers.get("Content-Type", ""))
            decode = _Decoder(up.headers.get("Content-Encoding", ""))
            await resp.prepare(request)
            try:
                async for chunk in up.content.iter_any():
                    if ex.first_byte_ms is None:
                        ex.first_byte_ms = (time.perf_counter() - t0) * 1000
                    await resp.write(chunk)
                    body.release()  # the first byte is the client's: the body to the spool
                    assembler.feed(decode(chunk))
            except asyncio.CancelledError:
                ex.answer = assembler.finish()  # what the client had when it left
                ex.total_ms = (time.perf_counter() - t0) * 1000
                raise
            except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
                ex.answer = assembler.finish()
                ex.outcome = "upstream-cut"
                ex.note = f"The upstream's answer broke off ({_reason(exc)})."
                ex.total_ms = (time.perf_counter() - t0) * 1000
                # The client sees the break as it would have without the proxy.
                if request.transport is not None:
                    request.transport.close()
                return resp
            ex.total_ms = (time.perf_counter() - t0) * 1000
            ex.answer = assembler.finish()
            if decode.failed:
                ex.note = "The answer's content encoding could not be decoded; not reassembled."
            if assembler.sse and not ex.answer.complete:
                ex.outcome = "incomplete"
                ex.note = "The answer's stream ended before its own end event."
            with contextlib.suppress(ConnectionError):
                await resp.write_eof()
            return resp

    async def _rewritten(self, request: web.Request, ex: Exchange, body: Sink) -> bytes:
        raw = await request.read()
        rw = self.rewriter
        try:
            if len(raw) >= THREAD_REWRITE:
                done = await asyncio.to_thread(rw.rewrite, ex.protocol, ex.request_headers, raw)
            else:
                done = rw.rewrite(ex.protocol, ex.request_headers, raw)
        except Exception as exc:  # a rewrite never fails a request: it goes as it came
            ex.note = f"The request could not be rewritten ({_reason(exc)}); forwarded unchanged."
            body.extend(raw)
            return raw
        # What is recorded is what the upstream receives.
        body.extend(done.body)
        ex.elided = done.texts
        ex.rewritten = done.changed
        if done.note:
            ex.note = done.note
        return done.body


class _Forwarded(payload.AsyncIterablePayload):
    """The client's body to the upstream as the server reads it: each piece written on the
    upstream's connection at once, waiting for that connection to drain only once DRAIN_AT
    bytes wait on it (aiohttp's own payload waits after every piece past 64 KB: a 10 MB body
    cost the proxy ~2.5 ms more CPU, and its first byte ~6 ms more, so)."""

    async def write_with_length(self, writer: AbstractStreamWriter,
                                content_length: int | None) -> None:  # fmt: skip
        if self._cached_chunks is not None or self._iter is None:
            await super().write_with_length(writer, content_length)
            return
        ours = writer if isinstance(writer, StreamWriter) else None
        left = content_length
        try:
            while True:
                chunk = await anext(self._iter)
                if left is not None:  # the client's own Content-Length framed it already
                    chunk, left = chunk[: max(left, 0)], left - len(chunk)
                if not chunk:
                    continue
                if ours is None or ours.transport is None:
                    await writer.write(chunk)
                    continue
                await ours.write(chunk, drain=False)
                if ours.transport.get_write_buffer_size() > DRAIN_AT:
                    await ours.drain()
        except StopAsyncIteration:
            self._iter = None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _refuse(status: int, sentence: str) -> web.Response:
    return web.json_response(
        {"type": "error", "error": {"type": "ctxview_proxy", "message": sentence}}, status=status
    )
