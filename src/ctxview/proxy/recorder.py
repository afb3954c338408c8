"""Writing what the proxy saw, off the request's path: `put` only queues (never blocks, never
raises), one task builds the rows (in a worker thread: parsing a 10 MB body would hold the
event loop the other streams need) and writes them. A store that cannot be opened or written
loses the record, never the request: the loss is counted and recorded for `ctxview doctor`
(`agents/failures.py`). The queue holds at most `BUDGET` bytes of bodies; past that a record
is dropped, and that is recorded too."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from ctxview.agents import failures
from ctxview.importers import api_requests as api
from ctxview.proxy.record import Exchange, Recorded, Thread, build
from ctxview.store import proxy_records
from ctxview.store.writer import Writer

BUDGET = 256 << 20
# A body this big is parsed only once no request is in flight (or after `YIELD_SECONDS`):
# parsing holds the interpreter, and the streams going through need it more.
BIG = 1 << 20
YIELD_SECONDS = 2.0
EVENT = "proxy"  # the failures log's event name for the proxy's own losses


class Recorder:
    def __init__(self, store: Path, *, workspace: str = "") -> None:
        self.store = store
        self.active = 0  # requests in flight (the server counts them in and out)
        self._quiet = asyncio.Event()  # set while none is
        self._quiet.set()
        self.workspace = workspace
        self.queue: asyncio.Queue[Exchange | None] = asyncio.Queue()
        self.queued_bytes = 0
        self.written = 0
        self.lost = 0
        self.threads: dict[str, Thread] = {}
        self._writer: Writer | None = None
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._last_seq: dict[str, int] = {}

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="ctxview-proxy-rec")

    def request_started(self) -> None:
        self.active += 1
        self._quiet.clear()

    def request_ended(self) -> None:
        self.active -= 1
        if self.active <= 0:
            self._quiet.set()

    def put(self, ex: Exchange) -> None:
        size = len(ex.body)
        if self.queued_bytes + size > BUDGET:
            self._lose(ex, "the recorder's queue was full (the store is too slow)")
            return
        self.queued_bytes += size
        self._idle.clear()
        self.queue.put_nowait(ex)

    async def drain(self) -> None:
        """Until every queued record is written or lost (tests, and the end of `run`)."""
        await self._idle.wait()

    async def stop(self) -> None:
        if self._task is None:
            return
        self.queue.put_nowait(None)
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer.close()

    def _lose(self, ex: Exchange, why: str) -> None:
        self.lost += 1
        failures.record(self.store, EVENT, f"A proxied request was not recorded: {why}.",
                        {"path": ex.path.split("?")[0], "protocol": ex.protocol})  # fmt: skip

    def _thread(self, session: str) -> Thread:
        return self.threads.setdefault(session, Thread())

    def _seq(self, session: str, started: float) -> int:
        # Microseconds since the epoch: ordered by start, unique without asking the store.
        seq = max(int(started * 1_000_000), self._last_seq.get(session, -1) + 1)
        self._last_seq[session] = seq
        return seq

    async def _run(self) -> None:
        while True:
            ex = await self.queue.get()
            if ex is None:
                return
            try:
                await self._one(ex)
            except Exception as exc:  # a record never takes the proxy down
                self._lose(ex, failures.describe(exc, 0))
            finally:
                self.queued_bytes -= len(ex.body)
                if self.queue.empty():
                    self._idle.set()

    async def _one(self, ex: Exchange) -> None:
        if len(ex.body) >= BIG:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), YIELD_SECONDS)
        rec: Recorded = await asyncio.to_thread(build, ex, self._thread)
        seq = self._seq(rec.session, ex.started)
        rec.row.seq = seq
        if rec.row.api_n is not None:
            rec.row.api_n = proxy_records.PROXY_N + seq
        if rec.rows is not None:
            for r in rec.rows.requests:
                r["n"] = proxy_records.PROXY_N + seq
        thread = self._thread(rec.session)
        try:
            if self._writer is None:
                self._writer = await Writer.open(self.store)
            await self._write(self._writer, rec)
        except Exception:
            # The messages this request shares with the next were not stored: the next one
            # stores all of its own.
            self.threads[rec.session] = Thread(shapes=set())
            raise
        self.written += 1
        if rec.rows is not None:
            thread.prev_id = rec.row.request_id
            thread.prev_hashes = rec.hashes
            if rec.shape:
                thread.shapes.add(rec.shape)

    async def _write(self, writer: Writer, rec: Recorded) -> None:
        async with writer.transaction():
            await proxy_records.write(writer, rec.row, title=rec.title, workspace=self.workspace)
            if rec.rows is not None:
                await api.write_rows(writer, rec.session, rec.rows)
            await proxy_records.write_texts(writer, rec.session, rec.texts)
