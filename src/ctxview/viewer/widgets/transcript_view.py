"""The transcript: ONE Line-API ScrollView, no widget per message, and its keys.

Blocks are wrapped one at a time and their strips cached (`render/transcript_lines.py`); only
the lines on screen are rendered (`widgets/transcript_canvas.py`). Where each block lies is the
layout's (`layout/transcript_layout.py`: heights in a Fenwick tree, O(log n) per row); what is
read from the store, and when, the loader's (`loading/`): events and bodies only for the blocks
drawn. This class is what a person does: moves the cursor, opens, folds, lands on a hit.
"""

from __future__ import annotations

from typing import ClassVar, TypeAlias

from textual import events
from textual.binding import Binding, BindingType

from ctxview.viewer.layout.outline import Block
from ctxview.viewer.messages import OpenResult
from ctxview.viewer.widgets import transcript_messages as messages
from ctxview.viewer.widgets.transcript_canvas import TranscriptCanvas
from ctxview.viewer.widgets.transcript_hit import show_hit


class TranscriptView(TranscriptCanvas, can_focus=True):
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

    # The messages it posts (widgets/transcript_messages.py), by the names the screen knows
    Follow: TypeAlias = messages.Follow
    StubFollowed: TypeAlias = messages.StubFollowed
    ModeChanged: TypeAlias = messages.ModeChanged
    Loaded: TypeAlias = messages.Loaded
    Landed: TypeAlias = messages.Landed
    AgentFollowed: TypeAlias = messages.AgentFollowed
    SeqFollowed: TypeAlias = messages.SeqFollowed

    # Loading (the loader's; see loading/loader.py)

    async def load(self, around: int | None = None, rid: int | None = None) -> None:
        """The tail first, or the rows around event `around` (result `rid`'s); see
        `TranscriptLoader.load`. A later call supersedes it."""
        await self.loader.load(around, rid, self.loader.new_generation())

    def far(self, seq: int, rid: int | None = None) -> None:
        """Load the window around event `seq` (result `rid`'s, when it is one) and land there
        (the rest loads around it)."""
        # The generation taken now, not when the worker starts: the loader in flight must not
        # send another step's query in between (the jump's queries would wait behind it).
        gen = self.loader.new_generation()
        self.run_worker(self.loader.load(seq, rid, gen), group="outline")

    def hold_loading(self, held: bool) -> None:
        """While a jump looks its target up, the loader sends no further step."""
        self.loader.hold(held)

    async def fetch_new(self) -> None:
        """Rows past the last one (on StoreChanged); see `TranscriptLoader.fetch_new`."""
        await self.loader.fetch_new()

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
        return self.model.foldable(block)

    def relayout(self, block: Block) -> None:
        """Re-render one block now (after a fold or an elision changed) and fix its height."""
        block.touch()
        strips = self._strips_for(block, self.body_width)
        self.model.pending.pop(block.serial, None)
        height = len(strips) if strips is not None else self.model.estimate(block)
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
        self.model.raw = not self.model.raw
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

    def set_stored_mode(self, stored: bool) -> None:
        self.model.stored_mode = stored
        self._relayout_all()

    async def _on_click(self, event: events.Click) -> None:
        meta = event.style.meta if event.style else {}
        at = self.model.block_at(self.scroll_offset.y + event.y)
        if at is None:
            return
        block = at[0]
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

    # A search's hit, on its line (widgets/transcript_hit.py)

    async def show_hit(self, seq: int, words: tuple[str, ...]) -> None:
        """Land on the line of event `seq`'s block that holds one of `words`, and mark it."""
        await show_hit(self, seq, words)

    def mark_words(self, words: tuple[str, ...]) -> None:
        """Mark a search's words in the results' text (the caches are keyed by them)."""
        if words != self.lines.words:
            self.lines.words = words
            self.refresh()
