"""The proxy's spool and its recorder process: what a request leaves on disk while it is
recorded (private, no credential, gone once stored), the real `ctxview proxy` killed with
SIGKILL mid-record (its recorder, or the next proxy's, records what it left), a recorder killed
(started again), the spool's budget, and the live lease of a proxied session."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import sqlite3
import stat
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from test_proxy import MESSAGE_EVENTS, MESSAGES_BODY, Upstream, _base, _records, upstream

from ctxview.proxy import recorder as recorder_mod
from ctxview.proxy import spool
from ctxview.proxy.server import Proxy
from ctxview.store import Reader

__all__ = ["upstream"]  # the fixture, shared with test_proxy
CTXVIEW = Path(sys.executable).with_name("ctxview")
SESSION = "cc-abc-123"


async def _until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Wait for the event a test needs (polled: it happens in another process)."""
    end = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _stored(store: Path) -> list[tuple[str, str]]:
    if not store.exists():
        return []
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT session, outcome FROM proxy_records ORDER BY seq").fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def _spooled(store: Path) -> list[Path]:
    top = spool.root(store)
    return sorted(top.glob("*/*.json")) if top.exists() else []


async def _post(base: str, body: dict[str, Any] = MESSAGES_BODY) -> bytes:
    async with aiohttp.ClientSession() as s, s.post(
        f"{base}/v1/messages", data=json.dumps(body),
        headers={"content-type": "application/json", "x-api-key": "sk-ant-SPOOLSECRET"},
    ) as resp:  # fmt: skip
        return await resp.read()


class RealProxy:
    """`ctxview proxy` as a user runs it, in its own process, on the test's store."""

    def __init__(self, store: Path, upstream: str) -> None:
        self.store = store
        self.upstream = upstream
        self.proc: asyncio.subprocess.Process | None = None
        self.base = ""

    async def start(self) -> RealProxy:
        env = {**os.environ, "CTXVIEW_STORE": str(self.store),
               "CTXVIEW_BUSY_TIMEOUT_MS": "120000"}  # fmt: skip
        self.proc = await asyncio.create_subprocess_exec(
            str(CTXVIEW), "proxy", "--upstream", self.upstream, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), 60)).decode()
        self.base = line.strip().split("=", 1)[1]  # export ANTHROPIC_BASE_URL=…
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def recorder(self) -> int:
        kids = await _until(lambda: _children(self.pid), "the recorder process")
        return int(kids[0])

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()


@pytest.fixture
async def real(tmp_path: Path, upstream: tuple[Upstream, str]) -> AsyncIterator[list[RealProxy]]:
    started: list[RealProxy] = []
    yield started
    for p in started:
        await p.kill()


class Locked:
    """Another process's write lock on the store, as long as it is held."""

    def __init__(self, store: Path) -> None:
        self.conn = sqlite3.connect(store, isolation_level=None)
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


async def test_the_spool_is_private_holds_no_credential_and_goes_once_stored(
    proxy: Proxy, upstream: tuple[Upstream, str]
) -> None:
    up, _ = upstream
    up.hold = True
    s = aiohttp.ClientSession()
    resp = await s.post(f"{_base(proxy)}/v1/messages", data=json.dumps(MESSAGES_BODY),
                        headers={"x-api-key": "sk-ant-SPOOLSECRET",
                                 "content-type": "application/json"})  # fmt: skip
    await resp.content.readany()
    # In flight: the body is on disk already (written by the spool's thread), beside what the
    # proxy knows so far.
    sent = json.dumps(MESSAGES_BODY).encode()
    [meta] = await _until(lambda: _spooled(proxy.recorder.store), "the spool entry")
    await _until(lambda: spool.body_of(meta.with_suffix(".body")) == sent, "the body spooled")
    folder = meta.parent
    for p in (spool.root(proxy.recorder.store), folder):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700
    for p in folder.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        assert b"SPOOLSECRET" not in p.read_bytes()
    assert json.loads(meta.read_bytes())["final"] is False
    up.release.set()
    await resp.read()
    resp.close()
    await s.close()
    [rec] = await _records(proxy, SESSION)
    assert rec.outcome == "complete"
    assert _spooled(proxy.recorder.store) == []  # deleted once stored
    await proxy.stop()
    assert not spool.root(proxy.recorder.store).exists() or not any(
        spool.root(proxy.recorder.store).iterdir()
    )


async def _thinking(proxy: Proxy, up: Upstream) -> tuple[aiohttp.ClientSession, Any, Path]:
    """A streamed request in flight whose upstream has read it all and answers nothing yet."""
    up.think = True
    s = aiohttp.ClientSession()
    sent = asyncio.ensure_future(s.post(f"{_base(proxy)}/v1/messages", json=MESSAGES_BODY))
    await asyncio.wait_for(up.arrived.wait(), 60)  # the whole body went through the proxy
    [meta] = await _until(lambda: _spooled(proxy.recorder.store), "the spool entry")
    return s, sent, meta


async def test_the_body_is_spooled_once_the_answer_begins(
    proxy: Proxy, upstream: tuple[Upstream, str]
) -> None:
    """Spooling a body costs CPU the first byte waits for (2 shared cores): it is written once
    the answer's first byte went to the client."""
    up, _ = upstream
    proxy.recorder.hold_seconds = 3600.0  # only the first byte lets it go
    s, sent, meta = await _thinking(proxy, up)
    await asyncio.sleep(0.2)  # the spool's thread had the time to write anything it was given
    assert spool.body_of(meta.with_suffix(".body")) == b""
    up.release.set()
    resp = await sent
    assert await resp.read() == b"".join(MESSAGE_EVENTS)
    resp.close()
    await s.close()
    [rec] = await _records(proxy, SESSION)
    assert rec.outcome == "complete"
    body = json.dumps(MESSAGES_BODY).encode()
    assert rec.body_bytes == len(body) and rec.body_sha256 == hashlib.sha256(body).hexdigest()


async def test_a_body_whose_answer_is_slow_is_spooled_all_the_same(
    proxy: Proxy, upstream: tuple[Upstream, str]
) -> None:
    """An upstream slow to begin (a model thinking for minutes) does not keep the body in the
    proxy's memory only: it is spooled soon after it ended."""
    up, _ = upstream
    s, sent, meta = await _thinking(proxy, up)
    body = json.dumps(MESSAGES_BODY).encode()  # aiohttp's json= writes it so
    await _until(lambda: spool.body_of(meta.with_suffix(".body")) == body, "the body spooled")
    assert not up.first_sent.is_set()
    up.release.set()
    resp = await sent
    await resp.read()
    resp.close()
    await s.close()
    [rec] = await _records(proxy, SESSION)
    assert rec.outcome == "complete"


@pytest.fixture
async def proxy(tmp_path: Path, upstream: tuple[Upstream, str]) -> AsyncIterator[Proxy]:
    p = Proxy(tmp_path / "store.db", upstream=upstream[1])
    await p.start()
    yield p
    await p.stop()


async def test_a_proxy_killed_mid_record_leaves_it_to_its_recorder(
    tmp_path: Path, upstream: tuple[Upstream, str], real: list[RealProxy]
) -> None:
    up, url = upstream
    store = tmp_path / "store.db"
    p = await RealProxy(store, url).start()
    real.append(p)
    await _post(p.base, {**MESSAGES_BODY, "stream": False})
    await _until(lambda: _stored(store), "the first record")
    lock = Locked(store)  # the recorder cannot store the next: it waits for the lock
    try:
        assert await _post(p.base) == b"".join(MESSAGE_EVENTS)
        await _until(lambda: [m for m in _spooled(store) if json.loads(m.read_bytes())["final"]],
                     "the exchange spooled")  # fmt: skip
        up.hold = True  # and one in flight when the proxy dies
        s = aiohttp.ClientSession()
        held = await s.post(f"{p.base}/v1/messages", json=MESSAGES_BODY)
        await held.content.readany()
        sent = json.dumps(MESSAGES_BODY).encode()  # aiohttp's json= writes it so
        await _until(lambda: [m for m in _spooled(store) if not json.loads(m.read_bytes())["final"]
                              and spool.body_of(m.with_suffix(".body")) == sent],
                     "the request in flight spooled")  # fmt: skip
        recorder = await p.recorder()
        await p.kill()
        held.close()
        await s.close()
        assert _alive(recorder)
        assert len(_stored(store)) == 1
    finally:
        lock.release()
    # The recorder, its proxy gone, records what it left, then ends and removes the folder.
    await _until(lambda: not _alive(recorder), "the recorder's end")
    assert _stored(store) == [(SESSION, "complete"), (SESSION, "complete"), (SESSION, "cut")]
    assert _spooled(store) == []
    assert not any(spool.root(store).iterdir())


async def test_a_proxy_and_recorder_killed_are_recorded_by_the_next_start(
    tmp_path: Path, upstream: tuple[Upstream, str], real: list[RealProxy]
) -> None:
    _, url = upstream
    store = tmp_path / "store.db"
    p = await RealProxy(store, url).start()
    real.append(p)
    await _post(p.base, {**MESSAGES_BODY, "stream": False})
    await _until(lambda: _stored(store), "the first record")
    lock = Locked(store)
    try:
        assert await _post(p.base) == b"".join(MESSAGE_EVENTS)
        await _until(lambda: [m for m in _spooled(store) if json.loads(m.read_bytes())["final"]],
                     "the exchange spooled")  # fmt: skip
        recorder = await p.recorder()
        await p.kill()  # first, or it would start its recorder again
        os.kill(recorder, signal.SIGKILL)
        await _until(lambda: not _alive(recorder), "the recorder killed")
    finally:
        lock.release()
    assert len(_stored(store)) == 1 and len(_spooled(store)) == 1  # left on disk
    nxt = await RealProxy(store, url).start()
    real.append(nxt)
    await _until(lambda: len(_stored(store)) == 2, "the left record stored by the next start")
    assert _stored(store)[1] == (SESSION, "complete")
    await _until(lambda: not _spooled(store), "the orphan folder removed")
    assert [d.name.split("-")[0] for d in spool.root(store).iterdir()] == [str(nxt.pid)]


async def test_a_recorder_that_dies_is_started_again(
    proxy: Proxy, upstream: tuple[Upstream, str]
) -> None:
    assert await _post(_base(proxy)) == b"".join(MESSAGE_EVENTS)
    await proxy.recorder.drain()
    first = proxy.recorder.recorder_pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert await _post(_base(proxy)) == b"".join(MESSAGE_EVENTS)  # the request never waits
    recs = await _records(proxy, SESSION)
    assert len(recs) == 2 and proxy.recorder.lost == 0
    assert proxy.recorder.recorder_pid not in (None, first)


async def test_past_the_spools_budget_the_record_is_dropped_not_the_request(
    proxy: Proxy, upstream: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    up, _ = upstream
    monkeypatch.setattr(recorder_mod, "BUDGET", 1000)
    big = {**MESSAGES_BODY, "messages": [{"role": "user", "content": "x" * 5000}]}
    assert await _post(_base(proxy), big) == b"".join(MESSAGE_EVENTS)
    assert up.bodies[-1] == json.dumps(big).encode()
    await proxy.recorder.drain()
    assert proxy.recorder.lost == 1 and proxy.recorder.spooled == 0
    assert _spooled(proxy.recorder.store) == []
    assert await _post(_base(proxy)) == b"".join(MESSAGE_EVENTS)  # a small one still is
    assert len(await _records(proxy, SESSION)) == 1


async def test_a_proxied_session_is_live_while_its_proxy_runs(
    tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    p = Proxy(tmp_path / "store.db", upstream=upstream[1])
    await p.start()
    try:
        await _post(_base(p))
        await p.recorder.drain()

        async def live() -> bool:
            async with await Reader.open(p.recorder.store) as r:
                row = await r.session(SESSION)
                return row is not None and row.live

        end = time.monotonic() + 30
        while not await live():
            assert time.monotonic() < end, "the proxied session never became live"
            await asyncio.sleep(0.05)
    finally:
        await p.stop()
    assert not await live()  # released at the proxy's end, not left to run out


def test_a_body_written_over_a_recorded_one_is_itself_cut_or_whole(tmp_path: Path) -> None:
    folder, lock = spool.create(tmp_path / "store.db")
    try:
        first = spool.Entry(folder, "0000000001")
        first.open(b"{}")
        first.extend(b"a" * 100_000)
        assert first.finish(b"{}")
        inode = first.path(".body").stat().st_ino
        spool.discard(folder, first.name)  # recorded: its file kept for the next body
        nxt = spool.Entry(folder, "0000000002")
        nxt.open(b"{}")
        nxt.extend(b"b" * 10)
        nxt.extend(b"c" * 5)
        body = nxt.path(".body")
        assert body.stat().st_ino == inode  # written over, not a new file
        # A proxy killed here leaves this body, not the earlier one's bytes past it.
        assert spool.body_of(body) == b"b" * 10 + b"c" * 5
        assert nxt.finish(b"{}")
        assert (
            body.stat().st_size == spool.HEAD + 15 and spool.body_of(body) == b"b" * 10 + b"c" * 5
        )
        assert stat.S_IMODE(body.stat().st_mode) == 0o600
    finally:
        spool.remove(folder)
        os.close(lock)
    assert not folder.exists()
