"""Loading a session's transcript: the tail first (or the rows around a far jump's target), then
the rest in steps, and the live rows as they come. Each load takes a generation: an older one
stops when it sees a newer. The view is told through `LoaderHost`, and what the loader waits for
(the screen drawn, a jump's lookup done) it awaits as an event, never by polling."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol

from ctxview.store import Reader
from ctxview.store.records import Event
from ctxview.viewer.layout.outline import KIND, RID, ROLE, SEQ, TEXT_LINES, TOOL, Block, Outline
from ctxview.viewer.layout.transcript_layout import Row, TranscriptLayout
from ctxview.viewer.loading.bodies import Bodies
from ctxview.viewer.loading.signal import Signal
from ctxview.viewer.render.blocks import STARTS_AGENT, needs

TAIL_ROWS = 3000  # rows loaded before the first screen
# Rows loaded after the first screen, per step. Small steps: the one read connection runs one
# query at a time, so a jump's query waits for the step in flight, and a step holds the loop.
CHUNK_ROWS = 5000  # older rows (each step prepends: O(rows loaded))
AHEAD_ROWS = 2000  # after a far jump, the rows up to the tail (each step appends: O(step))
WINDOW_BEFORE = 200  # a far jump: rows loaded before the target, then after it
WINDOW_AFTER = 600
LIVE_PREFETCH = 50  # live rows fetched with their events and bodies, to be drawn with their text


class LoaderHost(Protocol):
    """What the loader asks of the view that shows what it loads."""

    @property
    def reader(self) -> Reader: ...
    @property
    def following(self) -> bool: ...
    @property
    def screen_height(self) -> int: ...

    def land(self, target: Block | None) -> None:
        """A new outline is in the layout: the cursor on `target`, or on the tail (and say so)."""

    def first_screen(self) -> None:
        """The first screen of the new outline is drawn (or its wait ran out)."""

    def add_rows(self, rows: list[Row], *, live: bool) -> list[Block]:
        """Rows past the last one (live ones, or a far jump's up to the tail)."""

    def add_older_rows(self, rows: list[Row], epoch: int) -> None: ...
    def block_changed(self, block: Block) -> None:
        """A loaded block read again with other contents: drawn anew."""

    def redraw(self, *, relink: bool) -> None:
        """Draw again (with `relink`, every cached line: links to rows loaded since)."""

    async def drawn(self, limit: float) -> None:
        """Until the blocks on screen are drawn with their text, at most `limit` seconds."""

    def whole(self) -> None:
        """The whole outline is loaded."""

    def start(self, work: Coroutine[Any, Any, None], group: str) -> None: ...
    def keep_loaded(self) -> None:
        """What is loaded now stays out of the cyclic collector's full collections."""

    def release_loaded(self) -> None: ...


class TranscriptLoader:
    """Reads one session's rows into a layout, and the bodies its blocks draw with."""

    def __init__(self, host: LoaderHost, session_id: str, layout: TranscriptLayout,
                 bodies: Bodies) -> None:  # fmt: skip
        self.host = host
        self.session_id = session_id
        self.layout = layout
        self.bodies = bodies
        self.generation = 0  # each load takes a number; an older one stops when it sees a newer
        self.fully_loaded = False
        self.at_tail = False  # the outline reaches the session's last row (live rows append)
        # call_ref -> (session id, title, results) of the sub-agents the session's calls started
        self.agents: dict[str, tuple[str, str, int]] = {}
        # rid -> (request, seq of the `elide` event) for the results an elision stride took out
        self.elided: dict[int, tuple[int, int]] = {}
        self.closed = False  # the view went
        self._elide_seq = 0
        self._free = asyncio.Event()  # no jump is looking its target up (see hold)
        self._free.set()
        self._held = 0
        self._bulk: Reader | None = None  # the loader's own read connection (see _bulk_reader)
        self._fetching = False
        self._dirty = False
        self.rows_in = Signal()  # fired as rows come into the outline (a new one, or more)

    @property
    def outline(self) -> Outline:
        return self.layout.outline

    def new_generation(self) -> int:
        self.generation += 1
        return self.generation

    async def load(self, around: int | None, rid: int | None, gen: int) -> None:
        """The tail first (the first screen), then older rows in chunks. With `around` (an
        event's seq): the rows around it first, the cursor on it, then the rows after it up to
        the tail and the older ones, without moving the cursor. `rid`: the target's result id,
        when it has one (its body comes with the window). A later generation supersedes it."""
        try:
            await self._load(around, rid, gen)
        except BaseException:
            if gen == self.generation:  # cancelled with its screen: nothing stays frozen
                self.host.release_loaded()
            raise
        if gen == self.generation:
            # Loaded, the outline lives as long as the view: it stays out of the cyclic
            # collector's full collections, which scanned all of it (195,000 objects at 100,000
            # results: 200-290 ms, in the middle of a jump, 1 jump in 20). Its objects are still
            # freed by their reference counts; the view releases them when it goes.
            if self.closed:
                self.host.release_loaded()
            else:
                self.host.keep_loaded()

    async def _load(self, around: int | None, rid: int | None, gen: int) -> None:
        reader = self.host.reader
        sid = self.session_id
        # The queries in one wave, not one after another: the read connection's thread runs them
        # back to back, and each round trip to it waits for a wake-up (tens of ms when the
        # machine is busy).
        elides = reader.events_of_kind(sid, "elide", self._elide_seq)
        if around is None:
            end, rows, elided = await asyncio.gather(
                reader.last_seq(sid), reader.outline(sid, limit=TAIL_ROWS), elides
            )
            epoch = await reader.count_kind(sid, "compaction", rows[0][SEQ] - 1) if rows else 0
        else:
            # With the window: the events and shown bodies its first screen most likely needs
            # (the target's call just before it, the results after it); the rest is fetched
            # below, once the blocks are known.
            near = [rid + i for i in range(16)] if rid is not None else []
            # Two gathers, one wave (their tasks are made in this order): typeshed types a
            # gather of at most six.
            (end, older, newer, upto), (elided, events, shown) = await asyncio.gather(
                asyncio.gather(
                    reader.last_seq(sid),
                    reader.outline(sid, before=around, limit=WINDOW_BEFORE),
                    reader.outline(sid, after=around - 1, before=around + WINDOW_AFTER,
                                   limit=WINDOW_AFTER),
                    reader.count_kind(sid, "compaction", around - 1),
                ),
                asyncio.gather(
                    elides,
                    reader.events_range(sid, max(around - 8, 1), around + 40),
                    reader.shown(sid, near),
                ),
            )  # fmt: skip
            rows = older + newer
            # The boundaries before the window's first row: those up to the target less the
            # window's own.
            epoch = upto - sum(1 for r in older if r[KIND] == "compaction")
            self.bodies.keep(events, shown)
        if gen != self.generation:
            return  # a later jump took over
        self.apply_elided(elided)
        if self.generation == 1:  # once: a far jump must not wait for it (new ones: fetch_new)
            await self.load_children()
        if gen != self.generation:
            return  # a later jump took over
        outline = Outline()
        outline.set_epoch(epoch)
        outline.append(rows)
        target = outline.block_at_seq(around) if around is not None else None
        # The blocks of the first screen, fetched before it is drawn: its first paint has their
        # text. By its blocks, not its rows: the target's call is a row before the target.
        await self._prefetch_blocks(self.layout.screenful(outline, target, self.host.screen_height))
        if gen != self.generation:
            return
        self.layout.reset(outline)
        self.fully_loaded = False
        self.at_tail = not rows or rows[-1][SEQ] >= end
        self.layout.estimate_all()
        self.host.land(target)
        self.rows_in.fire()
        # The first screen, drawn with its text, before any other row: the rest can wait.
        await self._between_steps(2.0)
        self.host.first_screen()
        await self._rest(gen, end)

    async def _rest(self, gen: int, end: int) -> None:
        """After the first screen: the rows up to the tail (after a jump, appended below the
        cursor), then the older ones. The steps read through a connection of their own: on the
        one the screen reads through, a jump's lookup waited behind the step in flight."""
        sid = self.session_id
        bulk = await self._bulk_reader()
        while not self.at_tail:
            await self._between_steps(0.5)
            if gen != self.generation:
                return
            last = self.outline.last_seq
            rows = await bulk.outline(sid, after=last, before=last + AHEAD_ROWS + 1,
                                      limit=AHEAD_ROWS)  # fmt: skip
            if gen != self.generation:
                return
            if rows:
                self.host.add_rows(rows, live=False)
                self.rows_in.fire()
            self.at_tail = not rows or rows[-1][SEQ] >= end
        if gen == self.generation and (
            self._dirty
            or self._revisable() is not None
            or self.outline.last_seq < await self.host.reader.last_seq(sid)
        ):
            # Rows that came meanwhile, or the last one replaced (which adds no row).
            self.host.start(self.fetch_new(), "fetch")
        while self.outline.first_seq is not None and self.outline.first_seq > 1:
            await self._between_steps(0.5)
            if gen != self.generation:
                return
            first = self.outline.first_seq
            rows = await bulk.outline(sid, before=first, limit=CHUNK_ROWS)
            if gen != self.generation:
                return
            if not rows:
                break
            epoch = await bulk.count_kind(sid, "compaction", rows[0][SEQ] - 1)
            if gen != self.generation:
                return
            self.host.add_older_rows(rows, epoch)
            self.rows_in.fire()
        await self.close_bulk()
        self.fully_loaded = True
        self.host.redraw(relink=True)  # links to results that were not loaded yet
        self.host.whole()

    async def _between_steps(self, limit: float) -> None:
        """Let a frame, a key or a live row through, wait for a jump's lookup to end, and let the
        blocks on screen (after a jump, say) get their text before the next step takes the
        connection."""
        # While loading, the outline is a growing heap of small objects: out of the cyclic
        # collector's reach, the full collections that growth triggers no longer scan them all
        # (50-70 ms pauses at 100,000 results, in the middle of a jump). They are still freed by
        # their reference counts; they are released when the view goes, or a load is cancelled.
        self.host.keep_loaded()
        await asyncio.sleep(0)  # one pass of the loop (a yield, not a wait)
        await self._free.wait()  # a jump's lookup, which always ends (see hold)
        await self.host.drawn(limit)
        self.layout.free_discarded()

    def hold(self, held: bool) -> None:
        """While a jump looks its target up, the loader sends no further step (the one read
        connection runs one query at a time: the lookup would wait behind the step)."""
        self._held += 1 if held else -1
        if self._held:
            self._free.clear()
        else:
            self._free.set()

    async def _bulk_reader(self) -> Reader:
        """The loader's own read connection, opened for the loading steps and closed when the
        outline is whole (or the view goes); the app's reader when one cannot be opened."""
        reader = self.host.reader
        if self._bulk is None:
            try:
                self._bulk = await Reader.open(reader.path)
            except Exception:  # a store being replaced, say: the app's reader serves
                self._bulk = None
            if self._bulk is not None and self.closed:  # the view went while it opened
                await self.close_bulk()
            if self._bulk is not None and self._bulk.identity != reader.identity:
                await self.close_bulk()  # another file is at the path now: not this outline's
        return self._bulk if self._bulk is not None else reader

    async def close_bulk(self) -> None:
        bulk, self._bulk = self._bulk, None  # taken first: a new load opens its own
        if bulk is not None:
            await bulk.close()

    async def close(self) -> None:
        """The view went."""
        self.closed = True
        self.host.release_loaded()  # what this view kept out of the full collections
        await self.close_bulk()

    # Elision strides and sub-agents

    async def load_elided(self, gen: int) -> None:
        """Which results an elision stride took out of the context: rid -> (request, seq)."""
        events = await self.host.reader.events_of_kind(self.session_id, "elide", self._elide_seq)
        if gen == self.generation:
            self.apply_elided(events)

    def apply_elided(self, events: list[Event]) -> None:
        if not events:
            return
        touched = []
        for ev in events:
            extra = ev.extra if ev.data else {}
            request = extra.get("request") if isinstance(extra, dict) else None
            rids = extra.get("rids") if isinstance(extra, dict) else None
            if isinstance(request, int) and isinstance(rids, list):
                for rid in rids:
                    if isinstance(rid, int) and rid not in self.elided:
                        self.elided[rid] = (request, ev.seq)
                        touched.append(rid)
            self._elide_seq = max(self._elide_seq, ev.seq or 0)
        for rid in touched:
            block = self.outline.block_of(rid)
            if block is not None:
                block.touch()
        if touched:
            self.host.redraw(relink=False)

    async def load_children(self) -> None:
        """The sub-agent sessions started by this session's calls (a Task's line names its own)."""
        rows = await self.host.reader.children(self.session_id)
        found = {row[2]: (row[0], row[1], row[3]) for row in rows if row[2]}
        if found != self.agents:
            self.agents.clear()
            self.agents.update(found)
            self.host.redraw(relink=True)

    # Live rows

    async def fetch_new(self) -> None:
        """Rows past the last one this view has (on StoreChanged), and that one again when it
        may have changed (see `_revisable`). Calls coalesce: while a fetch runs, another is
        only marked, and the fetch repeats once."""
        if self._fetching or not self.at_tail:
            # Not at the tail yet (after a far jump): the loader reads up to it, then fetches.
            self._dirty = True
            return
        self._fetching = True
        try:
            while True:
                self._dirty = False
                gen = self.generation
                revisable = self._revisable()
                rows, again = await self._fetch_tail(revisable)
                if gen != self.generation or not self.at_tail:
                    break  # another window was loaded meanwhile: these rows are not its
                if revisable is not None and revisable is self._revisable():
                    rows = self._revise(revisable, rows, again)
                if rows:
                    if self.host.following and len(rows) <= LIVE_PREFETCH:
                        await self._prefetch(rows)  # what the guess below missed, if anything
                    self.host.add_rows(rows, live=True)
                    self.rows_in.fire()
                    if any(r[KIND] == "elide" for r in rows):
                        self.host.start(self.load_elided(self.generation), "elided")
                    if any((r[TOOL] or "").lower() in STARTS_AGENT for r in rows):
                        await self.load_children()  # a sub-agent may have started
                if not self._dirty:
                    break
        finally:
            self._fetching = False

    def _revisable(self) -> Block | None:
        """The loaded row that may still change: the session's last event when it is a message.
        An importer stores the message it is gathering when it reaches the end of what is
        written (Claude Code writes a message one record per content block: its thinking, then
        its text) and, when the file grows, replaces it by the whole message at the same seq,
        before anything follows it. So only the last row can change, and only while it is a
        message; reading past it alone missed the text (issue 16 §4.1)."""
        blocks = self.layout.blocks
        block = blocks[-1] if blocks else None
        if block is not None and block.kind == "message" and block.seq == self.outline.last_seq:
            return block
        return None

    async def _fetch_tail(self, revisable: Block | None) -> tuple[list[Row], Event | None]:
        """The rows past the last one (from the `revisable` one's, when there is one: its row
        and its event again), and, in the same wave of queries (one wake-up of the read
        connection's thread, not three in a row), what drawing them at the tail most likely
        needs: the events past the last one and the shown bodies of the next result ids. The
        rows are asked for first, so the events read are never older than the rows."""
        reader, sid = self.host.reader, self.session_id
        last = self.outline.last_seq
        after = revisable.seq - 1 if revisable is not None else last
        if not self.host.following:
            if revisable is None:
                return await reader.outline(sid, after=after), None
            rows, again = await asyncio.gather(
                reader.outline(sid, after=after),
                reader.events_range(sid, revisable.seq, revisable.seq),
            )
            return rows, again[0] if again else None
        rid = self._last_rid()
        guess = [rid + 1 + i for i in range(8)] if rid is not None else []
        rows, events, shown = await asyncio.gather(
            reader.outline(sid, after=after),
            reader.events(sid, after=after, limit=LIVE_PREFETCH),
            reader.shown(sid, guess),
        )
        again = None
        if revisable is not None:
            again = next((ev for ev in events if ev.seq == revisable.seq), None)
            events = [ev for ev in events if ev.seq != revisable.seq]
        self.bodies.keep(events, shown)
        return rows, again

    def _revise(self, block: Block, rows: list[Row], event: Event | None) -> list[Row]:
        """Take the `block`'s row (the first of `rows`, read again) and its event: when either
        changed, the block is drawn anew. Returns the rows past it."""
        if not rows or rows[0][SEQ] != block.seq or rows[0][KIND] != "message":
            # Gone (never so today: a replacement comes in the same commit), or not a message
            # any more: the next row past it is new, drawn by the caller; the block stays.
            return [r for r in rows if r[SEQ] > block.seq]
        row, rest = rows[0], rows[1:]
        before = self.bodies.replace_event(block.seq, event)
        lines = row[TEXT_LINES] or 1
        if before is not None and before == event and lines == block.text_lines:
            return rest
        block.role, block.text_lines = row[ROLE], lines
        block.touch()
        self.host.block_changed(block)
        return rest

    def _last_rid(self) -> int | None:
        """The newest result id loaded (ids grow with the session)."""
        for block in reversed(self.layout.blocks[-200:]):
            if block.rid is not None:
                return block.rid
        return max(self.outline.by_rid, default=None)

    async def _prefetch_blocks(self, blocks: list[Block]) -> None:
        """The events and shown bodies `blocks` need and the caches lack."""
        seqs = {seq for b in blocks for seq in b.seqs}
        stored_mode = self.layout.stored_mode
        rids = [b.rid for b in blocks if b.rid is not None and needs(b, stored_mode)[0]]
        await self.bodies.fetch_missing(seqs, rids)

    async def _prefetch(self, rows: list[Row]) -> None:
        """The events and shown bodies of rows about to be shown at the tail, that the caches
        lack, so that their first paint has their text."""
        rids = [r[RID] for r in rows if r[RID] is not None]
        await self.bodies.fetch_missing({r[SEQ] for r in rows}, rids)
