"""The tool calls the hook engine answered before storing them: each call's events held
(`Held`, the writer its session writes through before the answer), journaled should the engine
be killed (`hook_journal`), and stored right after the transcript's record of the call, which
the import reaches (`HeldCalls`, the importer's `importers.runner.HeldCalls`), or at once when
no record is to come."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ctxview.agents.hook_journal import Journal
from ctxview.agents.hook_trace import Trace
from ctxview.store.probe import Probe
from ctxview.store.records import Body, Event
from ctxview.store.writer import Writer


class Held:
    """The writer a tool call's session writes through before the answer: its events are kept
    here (in order) and stored after the transcript's record of the call; anything else goes
    to the writer itself."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self.steps: list[tuple[str, list[Event], list[Body], int | None]] = []
        self.key: tuple[str, str] | None = None  # (session, call id) when an import puts them
        self.placed = False  # put by an import whose step has not been confirmed yet

    batching = False  # the session keeps its context state in step, as for a live write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    async def append(self, session_id: str, events: Any, bodies: Any = (), *,
                     fts_max_chars: int | None = None) -> None:  # fmt: skip
        self.steps.append((session_id, list(events), list(bodies), fts_max_chars))

    def rids(self) -> list[tuple[str, int]]:
        return [(sid, e.rid) for sid, events, _, _ in self.steps for e in events
                if e.kind == "result" and e.rid is not None]  # fmt: skip


class HeldCalls:
    """The calls whose events wait for their record, by (session, call id)."""

    def __init__(self, writer: Writer, probe: Probe, journal: Journal) -> None:
        self._writer, self._probe, self.journal = writer, probe, journal
        self._held: dict[tuple[str, str], Held] = {}
        self.recovered: set[str] = set()  # sessions with calls a killed engine held

    def waiting(self) -> bool:
        """Whether any call waits for its record (the journal is kept until none does)."""
        return bool(self._held)

    def has(self, session_id: str, call_id: str) -> bool:
        return (session_id, call_id) in self._held

    async def put(self, session_id: str, call_id: str) -> None:
        """The importer reached the record of this call: its events go in here, in the
        import's transaction (confirmed, or put again, once the import step has committed)."""
        held = self._held[(session_id, call_id)]
        for sid, events, bodies, fts in held.steps:
            await self._writer.append(sid, events, bodies, fts_max_chars=fts)
        held.placed = True

    def hold(self, held: Held) -> None:
        """A call answered: it waits for its record when it has a key, and is journaled (should
        this engine be killed before it is stored)."""
        try:
            if held.key is not None:
                self._held[held.key] = held
            self.journal.add(held.key, held.steps)
        except BaseException:
            self.drop(held)
            raise

    def drop(self, held: Held) -> None:
        if held.key is not None:
            self._held.pop(held.key, None)

    def stored(self, held: Held) -> bool:
        return bool(held.steps) and self._probe.has_results(held.rids())

    def confirm(self) -> None:
        """After an import step: the calls it put are in the store now (or, its transaction
        rolled back, to be put again)."""
        for key, held in list(self._held.items()):
            if not held.placed:
                continue
            held.placed = False
            if self.stored(held):
                held.steps.clear()
                del self._held[key]

    async def commit(self, held: Held | None, trace: Trace) -> None:
        """A call's events stored now, unless an import put them already."""
        if held is None:
            return
        self.drop(held)
        if not held.steps:
            return
        steps, held.steps = held.steps, []
        for sid, events, bodies, fts in steps:
            await self._writer.append(sid, events, bodies, fts_max_chars=fts)
        trace.lap("commit")

    async def recover(self) -> None:
        """The calls an engine killed after their answer held (the journal): those with a
        record to follow wait for the import of their transcript (`HookEngine.catch_up_open`),
        the others are stored now."""
        for key, steps in self.journal.read():
            held = Held(self._writer)
            held.steps, held.key = steps, key
            if self.stored(held):
                continue
            if key is not None:
                self._held[key] = held
                self.recovered.add(key[0])
            else:
                await self.commit(held, Trace())
        if not self._held:
            self.journal.clear()

    async def commit_recovered(self, busy: Callable[[str], bool]) -> None:
        """What a killed engine held and no transcript record came for (the import of every
        open session is done): stored as it is, unless its session's lane is at work."""
        for key in [k for k in self._held if k[0] in self.recovered]:
            if not busy(key[0]):
                with contextlib.suppress(Exception):
                    await self.commit(self._held[key], Trace())
        self.recovered.clear()
