"""The transcript drawn: a Line-API ScrollView over the layout (no widget per message), kept
where the person looks while rows come in, bodies arrive and blocks change height. The keys
are the view's (widgets/transcript_view.py); what is read, and when, the loader's (loading/)."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Any

from rich.style import Style
from textual import events, getters
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ctxview.store import Reader
from ctxview.viewer.layout.heights import Heights
from ctxview.viewer.layout.outline import Block, Outline
from ctxview.viewer.layout.transcript_layout import Row, TranscriptLayout
from ctxview.viewer.loading.bodies import Bodies
from ctxview.viewer.loading.loader import TranscriptLoader
from ctxview.viewer.loading.signal import Signal
from ctxview.viewer.reader_app import ReaderApp
from ctxview.viewer.render.colours import Palette
from ctxview.viewer.render.transcript_lines import GUTTER, TranscriptLines
from ctxview.viewer.widgets import transcript_messages as messages


class TranscriptCanvas(ScrollView):
    """A session's transcript drawn line by line, with the block cursor's place."""

    app = getters.app(ReaderApp)  # typed: the app's reader, its heap (keep_loaded)

    def __init__(self, session_id: str, *, digits: int = 4, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_id = session_id
        self.digits = digits
        self.model = TranscriptLayout()
        self.bodies = Bodies(session_id, lambda: self.reader, lambda: self.model.outline,
                             lambda work: self.run_worker(work, group="bodies"),
                             self._bodies_arrived)  # fmt: skip
        self.loader = TranscriptLoader(self, session_id, self.model, self.bodies)
        self.lines = TranscriptLines(
            self.model,
            self.bodies,
            digits=digits,
            elided=self.loader.elided,
            agents=self.loader.agents,
        )
        self.cursor_block: Block | None = None
        # (block serial, row) of the line a search's hit landed on: marked in the gutter
        self.hit_line: tuple[int, int] | None = None
        self.following = True
        self.new_rows = 0
        self.first_screen_at: float | None = None
        # Called with the new blocks as soon as rows are appended (the benchmark's probe).
        self.append_hooks: list[Callable[[list[Block]], None]] = []
        self.drawn_signal = Signal()  # fired after each render and each fetch of bodies
        self._base: Style | None = None
        self._heights_scheduled = False
        self._frame_width: int | None = None

    # The parts, as the screen and the tests ask for them

    @property
    def reader(self) -> Reader:
        return self.app.reader

    @property
    def outline(self) -> Outline:
        return self.model.outline

    @property
    def heights(self) -> Heights:
        return self.model.heights

    @property
    def blocks(self) -> list[Block]:
        return self.model.outline.blocks

    @property
    def stored_mode(self) -> bool:
        return self.model.stored_mode

    @property
    def raw(self) -> bool:
        return self.model.raw

    @property
    def fully_loaded(self) -> bool:
        return self.loader.fully_loaded

    @property
    def at_tail(self) -> bool:
        return self.loader.at_tail

    @property
    def agents(self) -> dict[str, tuple[str, str, int]]:
        return self.loader.agents

    @property
    def elided(self) -> dict[int, tuple[int, int]]:
        return self.loader.elided

    @property
    def words(self) -> tuple[str, ...]:
        return self.lines.words

    @property
    def palette(self) -> Palette:
        return self.lines.palette(self.app)

    @property
    def rows_in(self) -> Signal:
        return self.loader.rows_in

    async def on_unmount(self) -> None:
        await self.loader.close()

    # What the loader asks of the canvas (loading/loader.py's LoaderHost)

    @property
    def screen_height(self) -> int:
        return self.size.height

    def keep_loaded(self) -> None:
        self.app.keep_loaded()

    def release_loaded(self) -> None:
        self.app.release_loaded()

    def start(self, work: Coroutine[Any, Any, None], group: str) -> None:
        self.run_worker(work, group=group)

    def land(self, target: Block | None) -> None:
        self.cursor_block = None
        self.new_rows = 0
        self.lines.clear()
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
        self.post_message(messages.Landed())

    def first_screen(self) -> None:
        self.call_after_refresh(self._first_screen)

    def _first_screen(self) -> None:
        if self.first_screen_at is None:
            self.first_screen_at = time.perf_counter()

    def whole(self) -> None:
        self.post_message(messages.Loaded())

    def redraw(self, *, relink: bool) -> None:
        if relink:
            self.lines.clear()
        self.refresh()

    async def drawn(self, limit: float) -> None:
        def done() -> bool | None:
            return (self.visible_drawn() and not self.bodies.loading) or None

        await self.drawn_signal.until(done, limit)

    def _bodies_arrived(self) -> None:
        self.refresh()
        self.drawn_signal.fire()

    def add_rows(self, rows: list[Row], *, live: bool) -> list[Block]:
        """Rows past the last one: live rows (counted when scrolled up), or a far jump's rows
        loaded up to the tail (below the cursor, which stays put)."""
        follow = self.following and live
        new = self.model.append(rows)
        self._update_virtual_size()
        if follow:
            if self.blocks:
                self.cursor_block = self.blocks[-1]
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        elif live:
            self.new_rows += len(new)
        self.refresh()
        if live:
            self.post_message(messages.Follow(self.following, self.new_rows))
            for hook in self.append_hooks:
                hook(new)
        return new

    def add_older_rows(self, rows: list[Row], epoch: int) -> None:
        """Rows before the first one; the line at the top of the view stays there."""
        heights = self.model.heights
        anchor_i = heights.find(self.scroll_offset.y) if self.blocks else 0
        anchor = self.blocks[anchor_i] if self.blocks else None
        inside = self.scroll_offset.y - heights.offset(anchor_i) if anchor else 0
        at_end = self.following
        self.model.prepend(rows, epoch)
        self._update_virtual_size()
        if at_end:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        elif anchor is not None:
            y = self.model.heights.offset(anchor.index) + inside
            self.scroll_to(y=y, animate=False, immediate=True, force=True)

    def block_changed(self, block: Block) -> None:
        self.model.heights.set(block.index, self.model.estimate(block))
        self._update_virtual_size()
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        self.refresh()

    def _update_virtual_size(self) -> None:
        total = self.model.heights.total
        size = Size(self.text_width, total)
        if size == self.virtual_size:
            return
        if total <= self.size.height + 1 or self.virtual_size.height <= self.size.height + 1:
            self.virtual_size = size  # the scrollbar may come or go: a full layout
            return
        # Only the scrollable height changed: update the scrollbar without a layout of the
        # whole screen (a layout per appended row is what makes a live view lag).
        self.set_reactive(TranscriptCanvas.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    # Rendering

    def _strips_for(self, block: Block, width: int) -> list[Strip] | None:
        palette = self.palette
        strips = self.lines.cached(block, width, palette)
        if strips is None:
            # The console and the style only for a block drawn anew: the style walks the DOM.
            strips = self.lines.wrap(block, width, palette, self.app.console, self.rich_style)
        if strips is not None:
            self._check_height(block, len(strips))
        return strips

    def _check_height(self, block: Block, height: int) -> None:
        """A block measured at another height than laid out: fix it after this render."""
        if self.model.measured(block, height) and not self._heights_scheduled:
            self._heights_scheduled = True
            self.call_later(self._commit_heights)

    def _commit_heights(self) -> None:
        """Give blocks their measured heights (outside of a render); keep the view anchored."""
        self._heights_scheduled = False
        top = self.scroll_offset.y
        shift = self.model.commit(top)
        if shift is None:
            return
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
            self.drawn_signal.fire()  # the loader may be waiting for the screen drawn

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
        base = self._base if self._base is not None else self.rich_style
        at = self.model.block_at(self.scroll_offset.y + y)
        if at is None:
            return Strip.blank(width, base)
        block, row = at
        return self.lines.line(block, row, width, cursor=block is self.cursor_block,
                               hit=self.hit_line == (block.serial, row), palette=self.palette,
                               base=base, strips_for=self._strips_for)  # fmt: skip

    def on_resize(self, event: events.Resize) -> None:
        if self.body_width == self.model.laid_width:
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
        self.model.laid_width = self.body_width
        self.lines.clear()
        self.model.estimate_all()
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
            self.post_message(messages.Follow(self.following, self.new_rows))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.lines.clear()
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
            self.post_message(messages.Follow(self.following, self.new_rows))

    def mark_hit(self, block: Block, row: int) -> None:
        """Mark the line `row` of `block` as the one a search's hit landed on, and show it."""
        self.hit_line = (block.serial, row)
        self.lines.lines.clear()
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

    # What the screen asks

    def visible_drawn(self) -> bool:
        """Every block on screen is laid out with its text (not a placeholder)."""
        width = self.body_width
        pal = self.palette
        return all(self.lines.key(b, width, pal) in self.lines.strips
                   for b in self.visible_blocks())  # fmt: skip

    def visible_blocks(self) -> list[Block]:
        return self.model.visible(self.scroll_offset.y, self.size.height)

    def block_strips(self, block: Block) -> list[Strip] | None:
        """A block's lines as drawn now, or None while its text loads (asked for then)."""
        return self._strips_for(block, self.body_width)

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
