"""What blocks are drawn with, fetched from the store only for the blocks drawn: events by seq,
the shown bodies and the stored texts by result id, each in an LRU cache. A block drawn without
its data asks for it; the asks are fetched together, in range queries, by one worker at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from textual.cache import LRUCache

from ctxview.store import Reader
from ctxview.store.records import Event
from ctxview.viewer.layout.outline import Block, Outline
from ctxview.viewer.loading.signal import Signal
from ctxview.viewer.render.blocks import BlockData, needs


class Bodies:
    """The events and bodies of one session's blocks, as far as they were drawn."""

    def __init__(
        self,
        session_id: str,
        reader: Callable[[], Reader],
        outline: Callable[[], Outline],
        start: Callable[[Coroutine[Any, Any, None]], object],
        arrived: Callable[[], None],
    ) -> None:
        """`start` runs the fetching worker; `arrived` is called when a fetch is in (the view
        draws again); `outline` is the one loaded now (a block whose stored text came is laid
        out again)."""
        self.session_id = session_id
        self._reader = reader
        self._outline = outline
        self._start = start
        self._arrived = arrived
        self.events: LRUCache[int, Event] = LRUCache(8000)
        self.shown: LRUCache[int, str] = LRUCache(1500)
        self.stored: LRUCache[int, str] = LRUCache(24)
        self.want_seqs: set[int] = set()
        self.want_shown: set[int] = set()
        self.want_stored: set[int] = set()
        self.loading = False  # a fetch of what was asked for is under way
        self.signal = Signal()  # fired as each fetch comes in

    def data(self, block: Block, stored_mode: bool) -> BlockData | None:
        """What drawing `block` needs, or None while some of it is fetched (asked for here)."""
        want_shown, want_stored = needs(block, stored_mode)
        missing = False
        evs = []
        for seq in block.seqs:
            ev = self.events.get(seq)
            if ev is None:
                self.want_seqs.add(seq)
                missing = True
            evs.append(ev)
        shown = stored = None
        if want_shown and block.rid is not None:
            shown = self.shown.get(block.rid)
            if shown is None:
                self.want_shown.add(block.rid)
                missing = True
        if want_stored and block.rid is not None:
            stored = self.stored.get(block.rid)
            if stored is None:
                self.want_stored.add(block.rid)
                # An opened elision renders while its text loads; stored mode waits.
                missing = missing or stored_mode
        if self.want_seqs or self.want_shown or self.want_stored:
            self.schedule()
        if missing:
            return None
        first = evs[0]
        result = evs[-1] if block.rseq is not None else None
        if block.kind == "tool" and first is not None and first.kind == "result":
            result = first
        return BlockData(first, result, shown, stored)

    def schedule(self) -> None:
        if not self.loading:
            self.loading = True
            self._start(self._load_wanted())

    async def _load_wanted(self) -> None:
        reader, sid = self._reader(), self.session_id
        try:
            while self.want_seqs or self.want_shown or self.want_stored:
                seqs = sorted(self.want_seqs)
                shown_rids = sorted(self.want_shown)
                stored_rids = sorted(self.want_stored)
                self.want_seqs.clear()
                self.want_shown.clear()
                self.want_stored.clear()
                for lo, hi in clusters(seqs, 400):
                    for ev in await reader.events_range(sid, lo, hi):
                        self.events[ev.seq] = ev
                for rid, text in (await reader.shown(sid, shown_rids)).items():
                    self.shown[rid] = text
                for rid in stored_rids:
                    body = await reader.body(sid, rid)
                    if body is not None:
                        self.stored[rid] = body.stored
                    block = self._outline().block_of(rid)
                    if block is not None:
                        block.touch()
        finally:
            self.loading = False
        self._arrived()
        self.signal.fire()

    # Fetched ahead of drawing (the first screen, live rows), in one wave of queries

    def keep(self, events: list[Event], shown: dict[int, str]) -> None:
        for ev in events:
            self.events[ev.seq] = ev
        for rid, text in shown.items():
            self.shown[rid] = text

    def replace_event(self, seq: int, event: Event | None) -> Event | None:
        """Event `seq` read again (a message replaced in place); returns the one cached before."""
        before = self.events.get(seq)
        # Textual's LRUCache never overwrites a key it holds: the old event goes first.
        self.events.discard(seq)
        if event is not None:
            self.events[seq] = event
        return before

    async def fetch_missing(self, seqs: set[int], rids: list[int]) -> None:
        """Events and shown bodies the caches lack, in range queries, in one wave."""
        reader, sid = self._reader(), self.session_id
        todo = sorted(seq for seq in seqs if seq not in self.events)
        rids = [rid for rid in rids if rid not in self.shown]
        ranges = [reader.events_range(sid, lo, hi) for lo, hi in clusters(todo, 400)]
        if not ranges and not rids:
            return
        # Nested, in the same order (the tasks are made as the arguments are): typed.
        events, shown = await asyncio.gather(asyncio.gather(*ranges), reader.shown(sid, rids))
        self.keep([ev for part in events for ev in part], shown)


def clusters(seqs: list[int], gap: int) -> list[tuple[int, int]]:
    """Sorted numbers to ranges, split where two are more than `gap` apart."""
    out: list[tuple[int, int]] = []
    for s in seqs:
        if out and s - out[-1][1] <= gap:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out
