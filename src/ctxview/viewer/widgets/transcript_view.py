"""The transcript: ONE Line-API ScrollView, no widget per message.

Blocks are laid out and wrapped one at a time and their strips cached by (block, width, mode,
theme); only the lines on screen are rendered. Heights live in a Fenwick tree, so appending a
row, or a block changing height when its text arrives, costs O(log n). Events and bodies are
fetched from the store only for the blocks on screen, in range queries.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ctxview.store import Reader
from ctxview.store.records import Event
from ctxview.viewer.layout.heights import Heights
from ctxview.viewer.layout.outline import KIND, RID, ROLE, SEQ, TEXT_LINES, TOOL, Block, Outline
from ctxview.viewer.messages import OpenResult
from ctxview.viewer.render.blocks import (
    FOLD_MESSAGE,
    FOLD_RESULT,
    FOLD_SUMMARY,
    BlockData,
    RenderContext,
    estimate,
    needs,
    render_block,
)
from ctxview.viewer.render.colours import Palette, palette_for
from ctxview.viewer.render.wrap import wrap_strips

GUTTER = 2
TAIL_ROWS = 3000  # rows loaded before the first screen
# Rows loaded after the first screen, per step. Small steps: the one read connection runs one
# query at a time, so a jump's query waits for the step in flight, and a step holds the loop.
CHUNK_ROWS = 5000  # older rows (each step prepends: O(rows loaded))
AHEAD_ROWS = 2000  # after a far jump, the rows up to the tail (each step appends: O(step))
WINDOW_BEFORE = 200  # a far jump: rows loaded before the target, then after it
WINDOW_AFTER = 600
LIVE_PREFETCH = 50  # live rows fetched with their events and bodies, to be drawn with their text


class TranscriptView(ScrollView, can_focus=True):
    """A session's transcript with a block cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "tail", "Tail"),
        Binding("enter", "primary", "Open"),
        Binding("space", "fold", "Fold", show=False),
        Binding("e", "elision", "Elided lines", show=False),
        Binding("t", "detail", "Thinking/details", show=False),
        Binding("r", "raw", "Raw/Markdown", show=False),
    ]

    class Follow(Message):
        """Posted when rows arrive or the follow state changes (for the "new rows" note)."""

        def __init__(self, following: bool, new_rows: int) -> None:
            super().__init__()
            self.following = following
            self.new_rows = new_rows

    class StubFollowed(Message):
        """Enter on a stub: the screen jumps to the full result (keeping the jump history)."""

        def __init__(self, rid: int) -> None:
            super().__init__()
            self.rid = rid

    class ModeChanged(Message):
        """How the view draws changed (raw text or Markdown): the status line says which."""

    class Loaded(Message):
        """The whole outline is loaded (older rows come in after the first screen)."""

    class Landed(Message):
        """The first window of rows is on screen (the tail, or the rows around a far jump)."""

    class AgentFollowed(Message):
        """Enter on a call that started a sub-agent: the app opens the sub-agent's session."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    class SeqFollowed(Message):
        """A click on a mark that names an event (an elision stride): the screen goes there."""

        def __init__(self, seq: int) -> None:
            super().__init__()
            self.seq = seq

    def __init__(self, session_id: str, *, digits: int = 4, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_id = session_id
        self.digits = digits
        self.outline = Outline()
        self.heights = Heights()
        self.cursor_block: Block | None = None
        self.stored_mode = False
        self.raw = False  # messages as their raw text, not rendered Markdown
        # call_ref -> (session id, title, results) of the sub-agents the session's calls started
        self.agents: dict[str, tuple[str, str, int]] = {}
        # (block serial, row) of the line a search's hit landed on: marked in the gutter
        self.hit_line: tuple[int, int] | None = None
        self.words: tuple[str, ...] = ()  # the search's words, marked in results
        self.following = True
        self.new_rows = 0
        self.fully_loaded = False
        self.at_tail = False  # the outline reaches the session's last row (live rows append)
        self._generation = 0  # each load() takes a number; an older one stops when it sees a newer
        self._held = 0  # jumps looking their target up (see hold_loading)
        self._bulk: Any = None  # the loader's own read connection (see _bulk_reader)
        self._unmounted = False
        # rid -> (request, seq of the `elide` event) for the results an elision stride took out
        self.elided: dict[int, tuple[int, int]] = {}
        self._elide_seq = 0
        self._discarded: Outline | None = None  # see _reset
        self.first_screen_at: float | None = None
        # Called with the new blocks as soon as rows are appended (the benchmark's probe).
        self.append_hooks: list[Callable[[list[Block]], None]] = []
        self._strips: LRUCache[tuple[Any, ...], list[Strip]] = LRUCache(600)
        self._lines: LRUCache[tuple[Any, ...], Strip] = LRUCache(3000)
        self._base: Style | None = None
        self._events: LRUCache[int, Event] = LRUCache(8000)
        self._shown: LRUCache[int, str] = LRUCache(1500)
        self._stored: LRUCache[int, str] = LRUCache(24)
        self._want_seqs: set[int] = set()
        self._want_shown: set[int] = set()
        self._want_stored: set[int] = set()
        self._loading = False
        self._fetching = False
        self._dirty = False
        # block serial -> (block, measured height), applied after the render that measured it
        self._pending_heights: dict[int, tuple[Block, int]] = {}
        self._heights_scheduled = False
        self._laid_width = 0  # the body width the heights were laid out for
        self._palette: Palette | None = None
        self._frame_width: int | None = None
        self._palette_theme = ""

    # The data

    @property
    def reader(self) -> Any:
        return self.app.reader  # type: ignore[attr-defined]

    @property
    def blocks(self) -> list[Block]:
        return self.outline.blocks

    @property
    def palette(self) -> Palette:
        # Asked for on every line drawn: `current_theme` looks the theme up in a list each
        # time, the theme's name is a plain attribute.
        name = self.app.theme
        if self._palette is None or self._palette_theme != name:
            self._palette = palette_for(self.app.current_theme, self.app.console.color_system)
            self._palette_theme = name
        return self._palette

    def context(self) -> RenderContext:
        return RenderContext(self.palette, self.outline.epoch_of, self.stored_mode, self.digits,
                             self.words, self.raw, elided=self.elided,
                             extra={"agents": self.agents})  # fmt: skip

    def _key(self, block: Block, width: int) -> tuple[Any, ...]:
        """What a block's lines depend on: the block's state, the width, the modes, the theme."""
        return (block.serial, block.version, width, self.stored_mode, self.raw,
                self.palette.name, self.words)  # fmt: skip

    async def load(self, around: int | None = None, rid: int | None = None) -> None:
        """The tail first (the first screen), then older rows in chunks. With `around` (an
        event's seq): the rows around it first, the cursor on it, then the rows after it up to
        the tail and the older ones, without moving the cursor. `rid`: the target's result id,
        when it has one (its body comes with the window). A later call supersedes it."""
        self._generation += 1
        await self._load_generation(around, rid, self._generation)

    async def _load_generation(self, around: int | None, rid: int | None, gen: int) -> None:
        try:
            await self._load(around, rid, gen)
        except BaseException:
            if gen == self._generation:  # cancelled with its screen: nothing stays frozen
                gc.unfreeze()
            raise
        if gen == self._generation:
            # Loaded, the outline lives as long as the view: it stays out of the cyclic
            # collector's full collections, which scanned all of it (195,000 objects at 100,000
            # results: 200-290 ms, in the middle of a jump, 1 jump in 20). Its objects are still
            # freed by their reference counts; the view unfreezes when it goes.
            if self._unmounted:
                gc.unfreeze()
            else:
                gc.freeze()

    async def _load(self, around: int | None, rid: int | None, gen: int) -> None:
        reader = self.reader
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
            end, older, newer, upto, elided, events, shown = await asyncio.gather(
                reader.last_seq(sid),
                reader.outline(sid, before=around, limit=WINDOW_BEFORE),
                reader.outline(sid, after=around - 1, before=around + WINDOW_AFTER,
                               limit=WINDOW_AFTER),
                reader.count_kind(sid, "compaction", around - 1),
                elides,
                reader.events_range(sid, max(around - 8, 1), around + 40),
                reader.shown(sid, near),
            )  # fmt: skip
            rows = older + newer
            # The boundaries before the window's first row: those up to the target less the
            # window's own.
            epoch = upto - sum(1 for r in older if r[KIND] == "compaction")
            for ev in events:
                self._events[ev.seq] = ev
            for n, text in shown.items():
                self._shown[n] = text
        if gen != self._generation:
            return  # a later jump took over
        self._apply_elided(elided)
        if self._generation == 1:  # once: a far jump must not wait for it (new ones: fetch_new)
            await self._load_children()
        if gen != self._generation:
            return  # a later jump took over
        outline = Outline()
        outline.set_epoch(epoch)
        outline.append(rows)
        target = outline.block_at_seq(around) if around is not None else None
        # The blocks of the first screen, fetched before it is drawn: its first paint has their
        # text. By its blocks, not its rows: the target's call is a row before the target.
        await self._prefetch_blocks(self._screenful(outline, target))
        if gen != self._generation:
            return
        self._reset(outline)
        self.at_tail = not rows or rows[-1][SEQ] >= end
        self.heights.rebuild([estimate(b, self.stored_mode) for b in self.blocks])
        self._update_virtual_size()
        if target is not None:
            self.following = False
            self.move_to(target, top=True)
        else:
            if self.blocks:
                self.cursor_block = self.blocks[-1]
            self.following = self.at_tail
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        self.refresh()
        self.post_message(self.Landed())
        # The first screen, drawn with its text, before any other row: the rest can wait.
        await self._screen_first(2.0)
        self.call_after_refresh(self._first_screen)
        # After a jump: the rows up to the tail, appended below the cursor.
        # The steps below read through a connection of their own: on the one the screen reads
        # through, a jump's lookup waited behind the step in flight (tens of ms when busy).
        bulk = await self._bulk_reader()
        while not self.at_tail:
            await self._screen_first(0.5)
            if gen != self._generation:
                return
            last = self.outline.last_seq
            rows = await bulk.outline(sid, after=last, before=last + AHEAD_ROWS + 1,
                                      limit=AHEAD_ROWS)  # fmt: skip
            if gen != self._generation:
                return
            if rows:
                self._append(rows, live=False)
            self.at_tail = not rows or rows[-1][SEQ] >= end
        if gen == self._generation and (
            self._dirty
            or self._revisable() is not None
            or self.outline.last_seq < await reader.last_seq(sid)
        ):
            # Rows that came meanwhile, or the last one replaced (which adds no row).
            self.run_worker(self.fetch_new, group="fetch")  # made when it starts
        while self.outline.first_seq is not None and self.outline.first_seq > 1:
            await self._screen_first(0.5)
            if gen != self._generation:
                return
            first = self.outline.first_seq
            rows = await bulk.outline(sid, before=first, limit=CHUNK_ROWS)
            if gen != self._generation:
                return
            if not rows:
                break
            epoch = await bulk.count_kind(sid, "compaction", rows[0][SEQ] - 1)
            if gen != self._generation:
                return
            self._prepend(rows, epoch)
        await self._close_bulk()
        self.fully_loaded = True
        self._strips.clear()  # links to results that were not loaded yet
        self._lines.clear()
        self.refresh()
        self.post_message(self.Loaded())

    async def _bulk_reader(self) -> Any:
        """The loader's own read connection, opened for the loading steps and closed when the
        outline is whole (or the view goes); the app's reader when one cannot be opened."""
        if self._bulk is None:
            path = getattr(self.reader, "path", None)
            try:
                self._bulk = await Reader.open(path) if path is not None else None
            except Exception:  # a store being replaced, say: the app's reader serves
                self._bulk = None
            if self._bulk is not None and self._unmounted:  # the view went while it opened
                await self._close_bulk()
            if self._bulk is not None and self._bulk.identity != self.reader.identity:
                await self._close_bulk()  # another file is at the path now: not this outline's
        return self._bulk if self._bulk is not None else self.reader

    async def _close_bulk(self) -> None:
        bulk, self._bulk = self._bulk, None  # taken first: a new load opens its own
        if bulk is not None:
            await bulk.close()

    async def on_unmount(self) -> None:
        self._unmounted = True
        gc.unfreeze()  # what this view kept out of the full collections may be collected now
        await self._close_bulk()

    async def _screen_first(self, limit: float) -> None:
        """Between loading steps: let a frame, a key or a live row through, and let the blocks on
        screen (after a jump, say) get their text before the next step takes the connection."""
        # While loading, the outline is a growing heap of small objects: out of the cyclic
        # collector's reach, the full collections that growth triggers no longer scan them all
        # (50-70 ms pauses at 100,000 results, in the middle of a jump). They are still freed by
        # their reference counts; the view unfreezes when it goes, or when a load is cancelled.
        gc.freeze()
        await asyncio.sleep(0)
        while self._held:  # a jump's lookup, which always ends (see hold_loading)
            await asyncio.sleep(0.005)
        for _ in range(int(limit / 0.005)):
            if self.visible_drawn() and not self._loading:
                break
            await asyncio.sleep(0.005)
        if self._discarded:
            # The outline a far jump replaced, freed a piece per step (all at once: 50 ms).
            self._discarded.by_rid.clear()
            del self._discarded.blocks[-20000:]
            if not self._discarded.blocks:
                self._discarded = None

    def _reset(self, outline: Outline) -> None:
        """Another outline (a far jump loads another window of the session). The old one is
        freed after the new rows are drawn: 200,000 blocks take tens of ms to free."""
        self._discarded = self.outline
        self.outline = outline
        self.heights = Heights()
        self.cursor_block = None
        self.fully_loaded = False
        self.new_rows = 0
        self._pending_heights.clear()
        self._strips.clear()
        self._lines.clear()

    def far(self, seq: int, rid: int | None = None) -> None:
        """Load the window around event `seq` (result `rid`'s, when it is one) and land there
        (the rest loads around it)."""
        # The generation taken now, not when the worker starts: the loader in flight must not
        # send another step's query in between (the jump's queries would wait behind it).
        self._generation += 1
        self.run_worker(self._load_generation(seq, rid, self._generation), group="outline")

    def hold_loading(self, held: bool) -> None:
        """While a jump looks its target up, the loader sends no further step (the one read
        connection runs one query at a time: the lookup would wait behind the step)."""
        self._held += 1 if held else -1

    def _screenful(self, outline: Outline, target: Block | None) -> list[Block]:
        """The blocks a first screen of `outline` shows, by their estimated heights, and as many
        again (a block drawn taller or shorter than estimated): from `target` down, or the
        tail's up."""
        room = 2 * max(self.size.height, 24)
        blocks = outline.blocks
        if target is not None:
            out = []
            for block in blocks[target.index :]:
                out.append(block)
                room -= estimate(block, self.stored_mode)
                if room <= 0:
                    break
            return out
        out = []
        for block in reversed(blocks):
            out.append(block)
            room -= estimate(block, self.stored_mode)
            if room <= 0:
                break
        return out[::-1]

    async def _load_elided(self, gen: int) -> None:
        """Which results an elision stride took out of the context: rid -> (request, seq)."""
        events = await self.reader.events_of_kind(self.session_id, "elide", self._elide_seq)
        if gen == self._generation:
            self._apply_elided(events)

    def _apply_elided(self, events: list[Event]) -> None:
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
            self.refresh()

    async def _load_children(self) -> None:
        """The sub-agent sessions started by this session's calls (a Task's line names its own)."""
        children = getattr(self.reader, "children", None)
        if children is None:
            return
        found = {row[2]: (row[0], row[1], row[3]) for row in await children(self.session_id)
                 if row[2]}  # fmt: skip
        if found != self.agents:
            self.agents.clear()
            self.agents.update(found)
            self._strips.clear()
            self._lines.clear()

    def _first_screen(self) -> None:
        if self.first_screen_at is None:
            self.first_screen_at = time.perf_counter()

    def _prepend(self, rows: list[tuple[Any, ...]], epoch: int) -> None:
        anchor_i = self.heights.find(self.scroll_offset.y) if self.blocks else 0
        anchor = self.blocks[anchor_i] if self.blocks else None
        inside = self.scroll_offset.y - self.heights.offset(anchor_i) if anchor else 0
        at_end = self.following
        old = self.heights.values()
        count = len(self.blocks)
        new = self.outline.prepend(rows, epoch)
        # The new blocks, then the old ones but those merged into a new call (a result whose
        # call was among the older rows: the head of the old blocks).
        merged = count + len(new) - len(self.blocks)
        self.heights.rebuild([*(estimate(b, self.stored_mode) for b in new), *old[merged:]])
        self._update_virtual_size()
        if at_end:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        elif anchor is not None:
            y = self.heights.offset(anchor.index) + inside
            self.scroll_to(y=y, animate=False, immediate=True, force=True)

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
                gen = self._generation
                revisable = self._revisable()
                rows, again = await self._fetch_tail(revisable)
                if gen != self._generation or not self.at_tail:
                    break  # another window was loaded meanwhile: these rows are not its
                if revisable is not None and revisable is self._revisable():
                    rows = self._revise(revisable, rows, again)
                if rows:
                    if self.following and len(rows) <= LIVE_PREFETCH:
                        await self._prefetch(rows)  # what the guess below missed, if anything
                    self._append(rows)
                    if any((r[TOOL] or "").lower() in ("task", "agent") for r in rows):
                        await self._load_children()  # a sub-agent may have started
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
        block = self.blocks[-1] if self.blocks else None
        if block is not None and block.kind == "message" and block.seq == self.outline.last_seq:
            return block
        return None

    async def _fetch_tail(self, revisable: Block | None) -> tuple[list[tuple[Any, ...]], Any]:
        """The rows past the last one (from the `revisable` one's, when there is one: its row
        and its event again), and, in the same wave of queries (one wake-up of the read
        connection's thread, not three in a row), what drawing them at the tail most likely
        needs: the events past the last one and the shown bodies of the next result ids. The
        rows are asked for first, so the events read are never older than the rows."""
        sid = self.session_id
        last = self.outline.last_seq
        after = revisable.seq - 1 if revisable is not None else last
        if not self.following:
            if revisable is None:
                return await self.reader.outline(sid, after=after), None
            rows, again = await asyncio.gather(
                self.reader.outline(sid, after=after),
                self.reader.events_range(sid, revisable.seq, revisable.seq),
            )
            return rows, again[0] if again else None
        rid = self._last_rid()
        guess = [rid + 1 + i for i in range(8)] if rid is not None else []
        rows, events, shown = await asyncio.gather(
            self.reader.outline(sid, after=after),
            self.reader.events(sid, after=after, limit=LIVE_PREFETCH),
            self.reader.shown(sid, guess),
        )
        again = None
        for ev in events:
            if revisable is not None and ev.seq == revisable.seq:
                again = ev
            else:
                self._events[ev.seq] = ev
        for n, text in shown.items():
            self._shown[n] = text
        return rows, again

    def _revise(
        self, block: Block, rows: list[tuple[Any, ...]], event: Any
    ) -> list[tuple[Any, ...]]:
        """Take the `block`'s row (the first of `rows`, read again) and its event: when either
        changed, the block is drawn anew. Returns the rows past it."""
        if not rows or rows[0][SEQ] != block.seq or rows[0][KIND] != "message":
            # Gone (never so today: a replacement comes in the same commit), or not a message
            # any more: the next row past it is new, drawn by the caller; the block stays.
            return [r for r in rows if r[SEQ] > block.seq]
        row, rest = rows[0], rows[1:]
        before = self._events.get(block.seq)
        # Textual's LRUCache never overwrites a key it holds: the old event goes first.
        self._events.discard(block.seq)
        if event is not None:
            self._events[block.seq] = event
        lines = row[TEXT_LINES] or 1
        if before is not None and before == event and lines == block.text_lines:
            return rest
        block.role, block.text_lines = row[ROLE], lines
        block.touch()
        self.heights.set(block.index, estimate(block, self.stored_mode))
        self._update_virtual_size()
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        self.refresh()
        return rest

    def _last_rid(self) -> int | None:
        """The newest result id loaded (ids grow with the session)."""
        for block in reversed(self.blocks[-200:]):
            if block.rid is not None:
                return block.rid
        return max(self.outline.by_rid, default=None)

    async def _prefetch_blocks(self, blocks: list[Block]) -> None:
        """The events and shown bodies `blocks` need and the caches lack."""
        seqs = {seq for b in blocks for seq in b.seqs}
        rids = [b.rid for b in blocks if b.rid is not None and needs(b, self.stored_mode)[0]]
        await self._fetch_missing(seqs, rids)

    async def _prefetch(self, rows: list[tuple[Any, ...]]) -> None:
        """The events and shown bodies of rows about to be shown at the tail, that the caches
        lack, so that their first paint has their text."""
        rids = [r[RID] for r in rows if r[RID] is not None]
        await self._fetch_missing({r[SEQ] for r in rows}, rids)

    async def _fetch_missing(self, seqs: set[int], rids: list[int]) -> None:
        """Events and shown bodies the caches lack, in range queries, in one wave."""
        sid = self.session_id
        todo = sorted(seq for seq in seqs if seq not in self._events)
        rids = [rid for rid in rids if rid not in self._shown]
        ranges = [self.reader.events_range(sid, lo, hi) for lo, hi in _clusters(todo, 400)]
        if not ranges and not rids:
            return
        *events, shown = await asyncio.gather(*ranges, self.reader.shown(sid, rids))
        for ev in (ev for part in events for ev in part):
            self._events[ev.seq] = ev
        for rid, text in shown.items():
            self._shown[rid] = text

    def _append(self, rows: list[tuple[Any, ...]], *, live: bool = True) -> None:
        """Rows past the last one: live rows (counted when scrolled up), or a far jump's rows
        loaded up to the tail (below the cursor, which stays put)."""
        follow = self.following and live
        new, changed = self.outline.append(rows)
        for block in changed:
            block.touch()
            self.heights.set(block.index, estimate(block, self.stored_mode))
        for block in new:
            self.heights.append(estimate(block, self.stored_mode))
        self._update_virtual_size()
        if follow:
            if self.blocks:
                self.cursor_block = self.blocks[-1]
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        elif live:
            self.new_rows += len(new)
        self.refresh()
        if not live:
            return
        if any(r[KIND] == "elide" for r in rows):
            self.run_worker(self._load_elided(self._generation), group="elided")
        self.post_message(self.Follow(self.following, self.new_rows))
        for hook in self.append_hooks:
            hook(new)

    def _update_virtual_size(self) -> None:
        size = Size(self.text_width, self.heights.total)
        if size == self.virtual_size:
            return
        if (
            self.heights.total <= self.size.height + 1
            or self.virtual_size.height <= self.size.height + 1
        ):
            self.virtual_size = size  # the scrollbar may come or go: a full layout
            return
        # Only the scrollable height changed: update the scrollbar without a layout of the
        # whole screen (a layout per appended row is what makes a live view lag).
        self.set_reactive(TranscriptView.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    # Fetching what the blocks on screen need

    def _data(self, block: Block) -> BlockData | None:
        want_shown, want_stored = needs(block, self.stored_mode)
        missing = False
        evs = []
        for seq in block.seqs:
            ev = self._events.get(seq)
            if ev is None:
                self._want_seqs.add(seq)
                missing = True
            evs.append(ev)
        shown = stored = None
        if want_shown and block.rid is not None:
            shown = self._shown.get(block.rid)
            if shown is None:
                self._want_shown.add(block.rid)
                missing = True
        if want_stored and block.rid is not None:
            stored = self._stored.get(block.rid)
            if stored is None:
                self._want_stored.add(block.rid)
                # An opened elision renders while its text loads; stored mode waits.
                missing = missing or self.stored_mode
        if self._want_seqs or self._want_shown or self._want_stored:
            self._schedule_load()
        if missing:
            return None
        first = evs[0]
        result = evs[-1] if block.rseq is not None else None
        if block.kind == "tool" and first is not None and first.kind == "result":
            result = first
        return BlockData(first, result, shown, stored)

    def _schedule_load(self) -> None:
        if not self._loading:
            self._loading = True
            self.run_worker(self._load_wanted(), group="bodies")

    async def _load_wanted(self) -> None:
        try:
            while self._want_seqs or self._want_shown or self._want_stored:
                seqs = sorted(self._want_seqs)
                shown_rids = sorted(self._want_shown)
                stored_rids = sorted(self._want_stored)
                self._want_seqs.clear()
                self._want_shown.clear()
                self._want_stored.clear()
                for lo, hi in _clusters(seqs, 400):
                    for ev in await self.reader.events_range(self.session_id, lo, hi):
                        self._events[ev.seq] = ev
                for rid, text in (await self.reader.shown(self.session_id, shown_rids)).items():
                    self._shown[rid] = text
                for rid in stored_rids:
                    body = await self.reader.body(self.session_id, rid)
                    if body is not None:
                        self._stored[rid] = body.stored
                    block = self.outline.block_of(rid)
                    if block is not None:
                        block.touch()
        finally:
            self._loading = False
        self.refresh()

    # Rendering

    def _strips_for(self, block: Block, width: int) -> list[Strip] | None:
        key = self._key(block, width)
        cached = self._strips.get(key)
        if cached is not None:
            self._check_height(block, len(cached))
            return cached
        data = self._data(block)
        if data is None:
            return None
        strips = wrap_strips(render_block(block, data, self.context(), width), self.app.console,
                             width, self.rich_style)  # fmt: skip
        self._strips[key] = strips
        self._check_height(block, len(strips))
        return strips

    def _check_height(self, block: Block, height: int) -> None:
        """A block measured at another height than laid out: fix it after this render."""
        if height != self.heights.get(block.index):
            self._pending_heights[block.serial] = (block, height)
            if not self._heights_scheduled:
                self._heights_scheduled = True
                self.call_later(self._commit_heights)

    def _commit_heights(self) -> None:
        """Give blocks their measured heights (outside of a render); keep the view anchored."""
        self._heights_scheduled = False
        pending, self._pending_heights = self._pending_heights, {}
        if not pending:
            return
        top = self.scroll_offset.y
        shift = 0
        for block, height in pending.values():
            if block.index >= len(self.blocks) or self.blocks[block.index] is not block:
                continue  # merged away by a prepend
            start = self.heights.offset(block.index)
            delta = self.heights.set(block.index, height)
            if start < top:
                shift += delta
        self._update_virtual_size()
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        elif shift:
            self.scroll_to(y=top + shift, animate=False, immediate=True, force=True)
        self.refresh()

    def render_lines(self, crop: Any) -> list[Strip]:
        # The widget's style walks the DOM: look it up once per render, not once per line.
        self._base = self.rich_style
        self._frame_width = self.text_width  # once per render, not once per line
        try:
            return super().render_lines(crop)
        finally:
            self._frame_width = None

    @property
    def text_width(self) -> int:
        """The columns lines are drawn in: the widget's width less its scrollbar (a line as
        wide as the widget would lose its last characters under the scrollbar)."""
        return self.scrollable_content_region.width

    @property
    def body_width(self) -> int:
        """The columns a block's text wraps to (the cursor's gutter on its left)."""
        return max(self.text_width - GUTTER, 4)

    def render_line(self, y: int) -> Strip:
        width = self._frame_width or self.text_width
        line = self.scroll_offset.y + y
        base = self._base if self._base is not None else self.rich_style
        if not self.blocks or line >= self.heights.total:
            return Strip.blank(width, base)
        index = self.heights.find(line)
        block = self.blocks[index]
        row = line - self.heights.offset(index)
        pal = self.palette
        cursor = block is self.cursor_block
        hit = self.hit_line == (block.serial, row)
        key = (*self._key(block, width), row, cursor, hit)
        cached = self._lines.get(key)
        if cached is not None:
            return cached
        body_width = max(width - GUTTER, 4)
        strips = self._strips_for(block, body_width)
        if strips is None:
            strip = (
                Strip([Segment("…", base + pal.dim)]).extend_cell_length(body_width, base)
                if row == 0
                else Strip.blank(body_width, base)
            )
        elif row < len(strips):
            strip = strips[row]
        else:
            strip = Strip.blank(body_width, base)
        if hit:
            gutter = Segment("» ", base + pal.hit)  # the line a search's hit landed on
        elif cursor:
            gutter = Segment("▌ ", base + pal.cursor)
        else:
            gutter = Segment(" " * GUTTER, base)
        out = Strip([gutter, *strip], GUTTER + strip.cell_length)
        if out.cell_length != width:
            out = out.crop_extend(0, width, base)
        if strips is not None:
            self._lines[key] = out
        return out

    def on_resize(self, event: events.Resize) -> None:
        if self.body_width == self._laid_width:
            # Only the height changed (the prompt bar came or went): the lines are the same,
            # and the view stays where it is (on a search's hit line, say); at the live tail it
            # stays at the tail (a panel opening below must not hide the newest rows).
            self._update_virtual_size()
            if self.following:
                self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
            return
        self._relayout_all()

    def _relayout_all(self) -> None:
        """A new width or mode: every height is an estimate again, kept around the cursor."""
        anchor = self.cursor_block
        self._laid_width = self.body_width
        self._strips.clear()
        self._lines.clear()
        self.heights.rebuild([estimate(b, self.stored_mode) for b in self.blocks])
        self._update_virtual_size()
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        elif anchor is not None:
            self.scroll_to(y=self.heights.offset(anchor.index), animate=False, immediate=True,
                           force=True)  # fmt: skip
        self.refresh()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        at_end = round(new_value) >= self.max_scroll_y and self.at_tail
        if at_end != self.following or (at_end and self.new_rows):
            self.following = at_end
            if at_end:
                self.new_rows = 0
            self.post_message(self.Follow(self.following, self.new_rows))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._lines.clear()
        self._base = None

    # The cursor

    @property
    def cursor(self) -> int:
        return self.cursor_block.index if self.cursor_block is not None else 0

    def move_to(self, block: Block, *, top: bool = False) -> None:
        """Put the cursor on a block and scroll it into view (at the top when `top`)."""
        previous = self.cursor_block
        self.cursor_block = block
        start = self.heights.offset(block.index)
        end = start + self.heights.get(block.index)
        view_top, view_h = self.scroll_offset.y, self.size.height
        if top or start < view_top:
            y = start
        elif end > view_top + view_h:
            y = min(start, end - view_h)
        else:
            y = view_top
        if y != view_top:
            self.following = False
            self.scroll_to(y=y, animate=False, immediate=True, force=True)
        self.refresh()
        if previous is not block:
            self.post_message(self.Follow(self.following, self.new_rows))

    def action_cursor(self, step: int) -> None:
        if not self.blocks:
            return
        i = min(max(self.cursor + step, 0), len(self.blocks) - 1)
        # Past the blocks that draw nothing (a turn of tool calls only).
        while 0 < i < len(self.blocks) - 1 and self.heights.get(i) == 0:
            i += 1 if step > 0 else -1
        self.move_to(self.blocks[i])

    def action_page(self, step: int) -> None:
        """A page up or down; the cursor goes to the first block that starts on screen."""
        if not self.blocks:
            return
        y = self.scroll_offset.y + step * max(self.size.height - 1, 1)
        y = min(max(y, 0), self.max_scroll_y)
        self.following = False
        self.scroll_to(y=y, animate=False, immediate=True, force=True)
        i = self.heights.find(y)
        # The first block that starts on screen; inside a long block that fills the screen,
        # that block itself (the next one starts below: e, space and enter act on what is seen).
        if (self.heights.offset(i) < y and i + 1 < len(self.blocks)
                and self.heights.offset(i + 1) < y + self.size.height):  # fmt: skip
            i += 1
        if step > 0 and y >= self.max_scroll_y:
            i = len(self.blocks) - 1
        self.cursor_block = self.blocks[i]
        self.refresh()

    def action_first(self) -> None:
        if self.outline.first_seq is not None and self.outline.first_seq > 1:
            self.far(1)  # after a far jump the first rows may not be loaded yet
            return
        if self.blocks:
            self.following = False
            self.cursor_block = self.blocks[0]
            self.scroll_to(y=0, animate=False, immediate=True, force=True)
            self.refresh()

    def action_tail(self) -> None:
        """Back to the live tail: follow new rows again."""
        if not self.at_tail:
            self.run_worker(self.load(), group="outline")  # after a far jump: the tail first
            return
        if self.blocks:
            self.cursor_block = self.blocks[-1]
        self.following = True
        self.new_rows = 0
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        self.refresh()
        self.post_message(self.Follow(True, 0))

    # Opening and folding

    def foldable(self, block: Block) -> bool:
        if block.kind == "tool":
            lines = block.stored_lines + 1 if self.stored_mode else block.shown_lines
            return lines - 1 > FOLD_RESULT + 1
        if block.kind == "message":
            # Markdown can draw more lines than the text has (a table's rules): fold early.
            return block.text_lines > FOLD_MESSAGE // 2
        if block.kind == "boundary":
            # Markdown can draw more lines than the text has (a list's wrapped items): early.
            return block.text_lines > (FOLD_SUMMARY + 1 if self.raw else 1)
        return False

    def relayout(self, block: Block) -> None:
        """Re-render one block now (after a fold or an elision changed) and fix its height."""
        block.touch()
        strips = self._strips_for(block, self.body_width)
        self._pending_heights.pop(block.serial, None)
        height = len(strips) if strips is not None else estimate(block, self.stored_mode)
        start = self.heights.offset(block.index)
        self.heights.set(block.index, height)
        self._update_virtual_size()
        if start < self.scroll_offset.y:
            self.scroll_to(y=start, animate=False, immediate=True, force=True)
        self.refresh()

    def toggle_fold(self, block: Block) -> None:
        if self.foldable(block):
            block.open = not block.open
            self.relayout(block)

    def toggle_elision(self, block: Block) -> None:
        if block.kind == "tool" and block.capped:
            block.elision_open = not block.elision_open
            block.open = block.open or block.elision_open
            self.relayout(block)

    def toggle_detail(self, block: Block) -> None:
        """A message's thinking, a call's prompt, content or input: open or fold it in place."""
        if block.kind in ("message", "tool"):
            block.detail_open = not block.detail_open
            self.relayout(block)

    def action_detail(self) -> None:
        if self.cursor_block is not None:
            self.toggle_detail(self.cursor_block)

    def action_raw(self) -> None:
        """Messages as their raw text, or as rendered Markdown."""
        self.raw = not self.raw
        self._relayout_all()
        self.post_message(self.ModeChanged())

    def action_fold(self) -> None:
        if self.cursor_block is not None:
            self.toggle_fold(self.cursor_block)

    def action_elision(self) -> None:
        if self.cursor_block is not None:
            self.toggle_elision(self.cursor_block)

    def action_primary(self) -> None:
        """Enter: follow a stub, open a fold, then open the result."""
        block = self.cursor_block
        if block is None:
            return
        child = self.agents.get(block.call_ref) if block.call_ref else None
        if block.kind == "tool":
            if child is not None:
                self.post_message(self.AgentFollowed(child[0]))
            elif block.is_stub and block.points_to is not None:
                self.post_message(self.StubFollowed(block.points_to))
            elif self.foldable(block) and not block.open:
                self.toggle_fold(block)
            elif block.rid is not None:
                self.post_message(OpenResult(self.session_id, block.rid))
        elif not self.foldable(block) and block.kind == "message":
            self.toggle_detail(block)  # its thinking, if it has any
        else:
            self.toggle_fold(block)

    # A search's hit, on its line

    async def show_hit(self, seq: int, words: tuple[str, ...]) -> None:
        """Land on the line of event `seq`'s block that holds one of `words`, and mark it. What
        hides the line is opened: the block's fold, its thinking or call detail, an elided
        middle; what did not help is folded again."""
        block = self.outline.block_at_seq(seq)
        if block is None:
            self.far(seq)  # not loaded: the rows around it first
            for _ in range(500):
                await asyncio.sleep(0.01)
                block = self.outline.block_at_seq(seq)
                if block is not None:
                    break
            else:
                return
        self.move_to(block, top=True)
        row = await self._row_of(block, words)
        opened: list[Callable[[], None]] = []
        for can, toggle in (
            (lambda b: self.foldable(b) and not b.open, self.toggle_fold),
            (lambda b: b.kind in ("message", "tool") and not b.detail_open, self.toggle_detail),
            (lambda b: b.kind == "tool" and b.capped and not b.elision_open
             and not self.stored_mode, self.toggle_elision),
        ):  # fmt: skip
            if row is not None:
                break
            if can(block):
                toggle(block)
                opened.append(lambda t=toggle: t(block))  # type: ignore[misc]
                row = await self._row_of(block, words)
        if row is None:
            for undo in reversed(opened):
                undo()
            row = 0
        self.hit_line = (block.serial, row)
        self._lines.clear()
        # The heights measured while opening, applied now: applied after the scroll below, a
        # block that grew would push the view past the line.
        self.following = False
        self._commit_heights()
        top = self.heights.offset(block.index)
        y = top + row - max(self.size.height // 3, 1) if row >= self.size.height // 2 else top
        self.following = False
        self.scroll_to(y=max(min(y, self.max_scroll_y), 0), animate=False, immediate=True,
                       force=True)  # fmt: skip
        self.refresh()

    async def _row_of(self, block: Block, words: tuple[str, ...]) -> int | None:
        """The first row of the block's lines (as drawn now) that holds one of `words`, once its
        text has loaded (and an opened elision's stored text)."""
        low = [w.lower() for w in words]
        strips = None
        for _ in range(400):
            strips = self._strips_for(block, self.body_width)
            waiting = block.elision_open and block.rid is not None and block.rid not in self._stored
            if strips is not None and not waiting:
                break
            await asyncio.sleep(0.005)
        if not strips or not low:
            return None
        for row, strip in enumerate(strips):
            text = strip.text.lower()
            if any(w in text for w in low):
                return row
        return None

    def mark_words(self, words: tuple[str, ...]) -> None:
        """Mark a search's words in the results' text (the caches are keyed by them)."""
        if words != self.words:
            self.words = words
            self.refresh()

    def set_stored_mode(self, stored: bool) -> None:
        self.stored_mode = stored
        self._relayout_all()

    async def _on_click(self, event: events.Click) -> None:
        meta = event.style.meta if event.style else {}
        line = self.scroll_offset.y + event.y
        if not self.blocks or line >= self.heights.total:
            return
        block = self.blocks[self.heights.find(line)]
        self.cursor_block = block
        self.refresh()
        rid = meta.get("rid")
        if isinstance(rid, int):
            self.post_message(OpenResult(self.session_id, rid))
        elif meta.get("act") == "fold":
            self.toggle_fold(block)
        elif meta.get("act") == "elision":
            self.toggle_elision(block)
        elif meta.get("act") == "detail":
            self.toggle_detail(block)
        elif meta.get("act") == "agent" and block.call_ref in self.agents:
            self.post_message(self.AgentFollowed(self.agents[block.call_ref][0]))
        elif meta.get("act") == "stub" and block.points_to is not None:
            self.post_message(self.StubFollowed(block.points_to))
        elif meta.get("act") == "stride" and isinstance(meta.get("seq"), int):
            self.post_message(self.SeqFollowed(meta["seq"]))
        event.stop()

    # What the screen asks

    def visible_drawn(self) -> bool:
        """Every block on screen is laid out with its text (not a placeholder)."""
        width = self.body_width
        return all(self._key(b, width) in self._strips for b in self.visible_blocks())

    def visible_blocks(self) -> list[Block]:
        if not self.blocks:
            return []
        lo = self.heights.find(self.scroll_offset.y)
        hi = self.heights.find(self.scroll_offset.y + max(self.size.height - 1, 0))
        return self.blocks[lo : hi + 1]

    def block_text(self, block: Block) -> str:
        """A block's plain text as rendered now, or "" while its text loads (tests use it)."""
        strips = self._strips_for(block, self.body_width)
        return "\n".join(s.text.rstrip() for s in strips) if strips is not None else ""

    def screen_text(self) -> str:
        """The plain text on screen now (tests and the benchmark read it)."""
        self._frame_width = self.text_width
        try:
            return "\n".join(self.render_line(y).text for y in range(self.size.height))
        finally:
            self._frame_width = None


def _clusters(seqs: list[int], gap: int) -> list[tuple[int, int]]:
    """Sorted numbers to ranges, split where two are more than `gap` apart."""
    out: list[tuple[int, int]] = []
    for s in seqs:
        if out and s - out[-1][1] <= gap:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out
