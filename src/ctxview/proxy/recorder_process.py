"""The recorder process: parses what the proxy spooled and writes it into the store, so that
no parse (json.loads of a 10 MB body holds the interpreter ~40 ms) runs in the process that
forwards. Started and supervised by the proxy (`recorder.py`):
`python -m ctxview.proxy.recorder_process STORE SPOOL_FOLDER WORKSPACE`.

It reads the names of finished exchanges on stdin, one a line, records each (`record.build`,
then `proxy_records` and the api_* rows in one transaction), deletes its spool files, and
answers `ok NAME` or `lost NAME` on stdout. At its start it first records the folders of a
proxy and recorder that are both gone (killed), then what its own folder already holds
(a recorder started again). Stdin's end means its proxy stopped or died: it records what is
left, an exchange the proxy never finished as `cut`, releases its sessions' leases, removes
the folder and exits. A record it cannot store is lost, never retried: counted for the proxy
and logged for `ctxview doctor`. Ctrl-C in the terminal is not for it (its proxy's end is)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from ctxview.agents import failures
from ctxview.importers import api_requests as api
from ctxview.proxy import keying, protocols, spool
from ctxview.proxy.record import Exchange, Recorded, Thread, build, parse
from ctxview.store import proxy_records
from ctxview.store.writer import Writer

EVENT = "proxy"  # the failures log's event name for the proxy's own losses
NICE = 10  # recording is background work: the forwarding process comes first for the CPU


def lose(store: Path, path: str, protocol: str, why: str) -> None:
    failures.record(store, EVENT, f"A proxied request was not recorded: {why}.",
                    {"path": path.split("?")[0], "protocol": protocol})  # fmt: skip


class Storing:
    """What the proxy saw, into the store: each session's last request kept in memory, so
    the next one stores only the messages it adds."""

    def __init__(self, store: Path, *, workspace: str = "") -> None:
        self.store = store
        self.workspace = workspace
        self.threads: dict[str, Thread] = {}
        self._writer: Writer | None = None
        self._last_seq: dict[str, int] = {}
        # Responses answers by their id -> their session: a request continuing one (its
        # `previous_response_id`) joins that session.
        self.responses: dict[str, str] = {}

    def _thread(self, session: str) -> Thread:
        return self.threads.setdefault(session, Thread())

    def _seq(self, session: str, started: float) -> int:
        # Microseconds since the epoch: ordered by start, unique without asking the store.
        seq = max(int(started * 1_000_000), self._last_seq.get(session, -1) + 1)
        self._last_seq[session] = seq
        return seq

    async def one(self, folder: Path, name: str, *, live: bool) -> bool:
        """Record a spool entry and delete it; False when it was lost."""
        try:
            ex = spool.read(folder, name)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            lose(self.store, "?", "?", f"its spool entry could not be read ({type(exc).__name__})")
            spool.discard(folder, name)
            return False
        try:
            await self.record(ex, live=live)
            return True
        except Exception as exc:  # a record never takes the recorder down
            lose(self.store, ex.path, ex.protocol, failures.describe(exc, 0))
            return False
        finally:
            spool.discard(folder, name)

    async def _chains(self, ex: Exchange) -> dict[str, str]:
        """The answers' sessions, with the one this request continues looked up in the store
        when this process has not seen it (a recorder started again, a proxy of an earlier
        run)."""
        if ex.protocol != protocols.RESPONSES or b'"previous_response_id"' not in ex.body:
            return self.responses
        prev = keying.continues(ex.protocol, parse(ex))
        if prev and prev not in self.responses:
            found = None
            with contextlib.suppress(Exception):  # not found then: the record is kept anyway
                if self._writer is None:
                    self._writer = await Writer.open(self.store)
                found = await proxy_records.session_of_answer(self._writer, prev)
            if found:
                self.responses[prev] = found
        return self.responses

    async def record(self, ex: Exchange, *, live: bool) -> None:
        rec: Recorded = build(ex, self._thread, chains=await self._chains(ex))
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
        if live:  # live in the viewer while its proxy runs, as a hooked session while hooked
            self._writer.keep_live(rec.session)
        answered = keying.answer_id(ex.protocol, ex.answer.body if ex.answer else None)
        if answered:
            self.responses[answered] = rec.session
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

    async def close(self) -> None:
        """The writer closed: the sessions it kept live stop being live now."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer.close()


def _say(word: str, name: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.write(f"{word} {name}\n")
        sys.stdout.flush()


async def _lines(queue: asyncio.Queue[str | None]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        while line := await reader.readline():
            queue.put_nowait(line.decode().strip())
    finally:
        queue.put_nowait(None)


async def serve(store: Path, folder: Path, workspace: str) -> None:
    lock = spool.hold(folder)  # the folder is owned while this process lives, proxy or not
    storing = Storing(store, workspace=workspace)
    try:
        for orphan, fd in spool.orphans(store):
            try:
                for left in spool.entries(orphan, finals_only=False):
                    await storing.one(orphan, left, live=False)
            finally:
                spool.remove(orphan)
                os.close(fd)
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        for found in spool.entries(folder, finals_only=True):
            queue.put_nowait(found)
        reading = asyncio.get_running_loop().create_task(_lines(queue))
        while (name := await queue.get()) is not None:
            if not name or not (folder / f"{name}.json").exists():
                continue  # named twice (found at the start, then on stdin): recorded already
            _say("ok" if await storing.one(folder, name, live=True) else "lost", name)
        await reading
        # The proxy is gone or stopping: what is left, a request it never finished as cut.
        for left in spool.entries(folder, finals_only=False):
            _say("ok" if await storing.one(folder, left, live=False) else "lost", left)
    finally:
        await storing.close()
        spool.remove(folder)
        os.close(lock)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(NICE)
    store, folder, workspace = argv
    asyncio.run(serve(Path(store), Path(folder), workspace))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
