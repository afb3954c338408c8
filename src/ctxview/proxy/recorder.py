"""The proxy's side of recording: each request's body goes to the spool (`spool.py`) chunk by
chunk as it is forwarded, never held whole, and what else was seen follows when the exchange
ends; a recorder process of its own (`recorder_process.py`), started and supervised here, parses
and stores it. Nothing here parses a body or waits for the store, so recording costs the
forwarding a file write per chunk.

A store or spool that cannot be written loses the record, never the request: the loss is
counted (`lost`) and logged for `ctxview doctor` (`agents/failures.py`). The spool holds at most
`BUDGET` bytes not yet recorded; past that (or when its disk or quota is full) an exchange is
dropped from it, which is recorded too. A recorder that dies is started again, and finds what
its folder holds."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from ctxview.agents import failures
from ctxview.proxy import spool
from ctxview.proxy.record import Exchange
from ctxview.proxy.recorder_process import EVENT, lose

BUDGET = 256 << 20
RESTART_SECONDS = (1.0, 60.0)  # a recorder that died is started again after this, doubling
STOP_SECONDS = 30.0  # at the proxy's end, for the recorder to write what is left


class Sink:
    """Where one request's body goes as it is forwarded (`extend`), within the spool's budget."""

    def __init__(self, recorder: Recorder, entry: spool.Entry | None, why: str | None) -> None:
        self.recorder = recorder
        self.entry = entry
        self.why = why  # why it is not being spooled
        self.held = 0  # its bytes counted in the recorder's `spooled`

    def extend(self, chunk: bytes) -> None:
        entry = self.entry
        if entry is None or entry.failed is not None:
            return
        rec = self.recorder
        if rec.spooled + len(chunk) > BUDGET:
            entry.give_up("the spool was full (the recorder is behind)")
            self.let_go()
        elif entry.extend(chunk):
            rec.spooled += len(chunk)
            self.held += len(chunk)
        else:  # a write failed (a full disk): the entry is given up
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
        self.written = 0
        self.lost = 0
        self.folder: Path | None = None
        self._unavailable = "the spool folder could not be made"
        self._lock: int | None = None
        self._count = 0
        self._pending: dict[str, int] = {}  # spooled, awaiting the recorder: name -> bytes
        self._idle = asyncio.Event()  # set while nothing is in flight or awaiting the recorder
        self._idle.set()
        self._proc: asyncio.subprocess.Process | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self) -> None:
        try:
            self.folder, self._lock = spool.create(self.store)
        except OSError as exc:
            # Every request goes through all the same, each loss recorded.
            self._unavailable = f"the spool folder could not be made ({exc.strerror or exc})"
            return
        first = asyncio.get_running_loop().create_future()
        self._supervisor = asyncio.get_running_loop().create_task(
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
        name = f"{self._count:010d}"
        try:
            entry = spool.Entry(self.folder, name, ex)
        except OSError as exc:
            return Sink(self, None, spool._why(exc))
        return Sink(self, entry, None)

    def finish(self, sink: Sink, ex: Exchange) -> None:
        """The request ended: its record handed to the recorder process (never raises)."""
        self.active -= 1
        entry = sink.entry
        try:
            if entry is None:
                self._lose(ex, sink.why or "it was not spooled")
            elif not entry.finish(ex):
                sink.let_go()
                self._lose(ex, entry.failed or "its spool entry could not be written")
            else:
                self._pending[entry.name] = sink.held  # let go when the recorder answers
                self._notify(entry.name)
        except Exception as exc:  # recording never fails a request
            sink.let_go()
            self._lose(ex, failures.describe(exc, 0))
        self._check_idle()

    async def drain(self) -> None:
        """Until every request has ended and its record is written or lost (tests, and the end
        of `run`)."""
        await self._idle.wait()

    async def stop(self) -> None:
        """The recorder told to finish (its stdin closed) and waited for, up to STOP_SECONDS;
        one still busy goes on by itself and removes the folder when done."""
        self._stopping = True
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
        if self.active <= 0 and not self._pending:
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
