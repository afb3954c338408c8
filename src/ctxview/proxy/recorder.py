"""The proxy's side of recording: each request's body goes to the spool (`spool.py`) as it is
forwarded, once its answer has begun (`Sink`), and what else was seen follows when the exchange
ends; a recorder process of its own (`recorder_process.py`), started and supervised here, parses
and stores it. Nothing here parses a body or waits for the store, and the spool's writes run on
a thread of their own.

A store or spool that cannot be written loses the record, never the request: the loss is
counted (`lost`) and logged for `ctxview doctor` (`agents/failures.py`). The spool holds at most
`BUDGET` bytes not yet recorded; past that (or when its disk or quota is full) an exchange is
dropped from it, which is recorded too. A recorder that dies is started again, and finds what
its folder holds."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxview.agents import failures
from ctxview.proxy import spool
from ctxview.proxy.record import Exchange
from ctxview.proxy.recorder_process import EVENT, lose

BUDGET = 256 << 20  # bytes spooled and not yet recorded
# Bytes handed to the spool writer and not yet written: past this the disk is too slow, and the
# record is dropped rather than held in memory.
QUEUE_BUDGET = 64 << 20
# A request's body is kept back from the spool until its answer's first byte (`Sink`): at most
# this many bytes of all requests at once, and for at most HOLD_SECONDS after the body's end.
HOLD_BUDGET = 64 << 20
HOLD_SECONDS = 0.05
RESTART_SECONDS = (1.0, 60.0)  # a recorder that died is started again after this, doubling
STOP_SECONDS = 30.0  # at the proxy's end, for the recorder to write what is left


class _Writer(threading.Thread):
    """The spool's writes in order, off the event loop: a 10 MB body's writes took the loop
    4-36 ms (page-cache writeback), which every stream in flight waits for."""

    def __init__(self) -> None:
        super().__init__(name="ctxview-spool", daemon=True)
        self.jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self.done = 0  # bytes written (only this thread adds; the loop reads)

    def run(self) -> None:
        while (job := self.jobs.get()) is not None:
            fn, args = job
            with contextlib.suppress(Exception):  # each job catches its own; never the thread
                fn(*args)


class Sink:
    """Where one request's body goes as it is forwarded (`extend`), within the spool's budgets.

    Its chunks are kept back until the answer's first byte has gone to the client (`release`),
    or HOLD_SECONDS after the body ended, or past HOLD_BUDGET held by all requests: the spool's
    writes of a 10 MB body took 3-5 ms of the 2 cores the client, the proxy and the upstream
    share, all of it added to the first byte."""

    def __init__(self, recorder: Recorder, entry: spool.Entry | None, why: str | None) -> None:
        self.recorder = recorder
        self.entry = entry
        self.why = why  # why it is not (or no longer) being spooled
        self.held = 0  # its bytes counted in the recorder's `spooled`
        self._kept: list[bytes] | None = []  # chunks not yet handed to the writer
        self._kept_bytes = 0

    def extend(self, chunk: bytes) -> None:
        entry = self.entry
        if entry is None or self.why is not None or not chunk:
            return
        rec = self.recorder
        if rec.spooled + len(chunk) > BUDGET:
            self.give_up("the spool was full (the recorder is behind)")
        elif rec.queued + len(chunk) > QUEUE_BUDGET:
            self.give_up("the spool's disk was too slow")
        else:
            rec.spooled += len(chunk)
            self.held += len(chunk)
            if self._kept is not None and rec.holding + len(chunk) <= HOLD_BUDGET:
                self._kept.append(chunk)
                self._kept_bytes += len(chunk)
                rec.holding += len(chunk)
                return
            self.release()
            rec.submitted += len(chunk)
            rec.submit(self._write, entry, [chunk], len(chunk))

    def release(self) -> None:
        """The chunks kept back go to the spool's writer; later ones go as they come."""
        kept, self._kept = self._kept, None
        if not kept:
            return
        rec = self.recorder
        rec.holding -= self._kept_bytes
        if self.entry is None or self.why is not None:
            return
        rec.submitted += self._kept_bytes
        rec.submit(self._write, self.entry, kept, self._kept_bytes)

    def _write(self, entry: spool.Entry, chunks: list[bytes], size: int) -> None:
        try:
            entry.extend_all(chunks)
        finally:
            self.recorder.writer.done += size

    def give_up(self, why: str) -> None:
        self.why = why
        self.release()  # nothing kept is written now; its bytes leave the budgets
        if self.entry is not None:
            self.recorder.submit(self.entry.give_up, why)
        self.let_go()

    def let_go(self) -> None:
        """Its bytes are no longer in the spool's budget."""
        self.recorder.spooled -= self.held
        self.held = 0


class Recorder:
    def __init__(self, store: Path, *, workspace: str = "") -> None:
        self.store = store
        self.workspace = workspace
        self.active = 0  # requests in flight (the server counts them in and out)
        self.spooled = 0  # bytes spooled and not yet recorded
        self.submitted = 0  # bytes handed to the spool writer
        self.holding = 0  # bytes of bodies kept back (`Sink.release`)
        self.hold_seconds = HOLD_SECONDS
        self.written = 0
        self.lost = 0
        self.folder: Path | None = None
        self.writer = _Writer()
        self._unavailable = "the spool folder could not be made"
        self._lock: int | None = None
        self._count = 0
        self._writing = 0  # ended, their spool entries being finished by the writer
        self._pending: dict[str, int] = {}  # spooled, awaiting the recorder: name -> bytes
        self._idle = asyncio.Event()  # set while nothing is in flight or awaiting the recorder
        self._idle.set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def queued(self) -> int:
        """Bytes handed to the spool writer and not yet written."""
        return self.submitted - self.writer.done

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        self.writer.jobs.put((fn, args))

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            self.folder, self._lock = spool.create(self.store)
        except OSError as exc:
            # Every request goes through all the same, each loss recorded.
            self._unavailable = f"the spool folder could not be made ({exc.strerror or exc})"
            return
        self.writer.start()
        first = self._loop.create_future()
        self._supervisor = self._loop.create_task(
            self._supervise(first), name="ctxview-proxy-recorder"
        )
        await first  # the recorder process is started (not necessarily ready)

    @property
    def recorder_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def begin(self, ex: Exchange) -> Sink:
        """A request starts: its spool entry, with what is known of it so far."""
        self.active += 1
        self._idle.clear()
        if self.folder is None:
            return Sink(self, None, self._unavailable)
        self._count += 1
        entry = spool.Entry(self.folder, f"{self._count:010d}")
        try:
            self.submit(entry.open, spool.meta_bytes(ex, final=False))
        except Exception as exc:  # recording never fails a request
            return Sink(self, None, failures.describe(exc, 0))
        return Sink(self, entry, None)

    def finish(self, sink: Sink, ex: Exchange) -> None:
        """The request ended: its final record to the spool, then named to the recorder process
        (never raises)."""
        self.active -= 1
        sink.release()
        try:
            if sink.entry is None:
                self._lose(ex, sink.why or "it was not spooled")
            else:  # through the writer even when given up: lost once its files are gone
                self._writing += 1
                self.submit(self._finish, sink, ex, spool.meta_bytes(ex, final=True))
        except Exception as exc:
            sink.give_up(failures.describe(exc, 0))
            self._lose(ex, failures.describe(exc, 0))
        self._check_idle()

    def _finish(self, sink: Sink, ex: Exchange, meta: bytes) -> None:
        """In the writer thread: the entry's last write, then back to the loop."""
        assert sink.entry is not None and self._loop is not None
        try:
            ok = sink.entry.finish(meta)
        except Exception as exc:
            sink.entry.give_up(failures.describe(exc, 0))
            ok = False
        with contextlib.suppress(RuntimeError):  # the loop closed: the next start records it
            self._loop.call_soon_threadsafe(self._spooled, sink, ex, ok)

    def _spooled(self, sink: Sink, ex: Exchange, ok: bool) -> None:
        assert sink.entry is not None
        self._writing -= 1
        if ok:
            self._pending[sink.entry.name] = sink.held  # let go when the recorder answers
            self._notify(sink.entry.name)
        else:
            sink.let_go()
            self._lose(ex, sink.entry.failed or "its spool entry could not be written")
        self._check_idle()

    async def drain(self) -> None:
        """Until every request has ended and its record is written or lost (tests, and the end
        of `run`)."""
        await self._idle.wait()

    async def stop(self) -> None:
        """The recorder told to finish (its stdin closed) and waited for, up to STOP_SECONDS;
        one still busy goes on by itself and removes the folder when done."""
        self._stopping = True
        if self.writer.is_alive():  # the spool's last writes, and their names to the recorder
            self.writer.jobs.put(None)
            await asyncio.to_thread(self.writer.join, STOP_SECONDS)
            await asyncio.sleep(0)  # the writer's last call_soon_threadsafe run
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        if self._supervisor is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._supervisor), STOP_SECONDS)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _check_idle(self) -> None:
        if self.active <= 0 and self._writing <= 0 and not self._pending:
            self._idle.set()

    def _notify(self, name: str) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            return  # the recorder started again finds it in the folder
        with contextlib.suppress(Exception):
            proc.stdin.write(f"{name}\n".encode())

    def _lose(self, ex: Exchange, why: str) -> None:
        self.lost += 1
        lose(self.store, ex.path, ex.protocol, why)

    def _answered(self, line: str) -> None:
        word, _, name = line.strip().partition(" ")
        size = self._pending.pop(name, None)
        if size is None:
            return
        self.spooled -= size
        if word == "ok":
            self.written += 1
        else:
            self.lost += 1  # the recorder logged why
        self._check_idle()

    async def _supervise(self, first: asyncio.Future[None]) -> None:
        assert self.folder is not None
        pause = RESTART_SECONDS[0]
        while True:
            try:
                self._proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "ctxview.proxy.recorder_process",
                    os.fspath(self.store), os.fspath(self.folder), self.workspace,
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                )  # fmt: skip
            except OSError as exc:
                failures.record(self.store, EVENT, "The proxy's recorder process could not "
                                f"start ({exc.strerror or exc}).")  # fmt: skip
                self._proc = None
            if not first.done():
                first.set_result(None)
            if self._proc is not None:
                assert self._proc.stdout is not None
                while line := await self._proc.stdout.readline():
                    self._answered(line.decode())
                code = await self._proc.wait()
                if self._stopping:
                    return
                failures.record(self.store, EVENT, f"The proxy's recorder process ended "
                                f"(status {code}); it is started again.")  # fmt: skip
            if self._stopping:
                return
            await asyncio.sleep(pause)
            pause = min(pause * 2, RESTART_SECONDS[1])
