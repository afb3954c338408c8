"""Where a transcript's blocks lie: the outline, each block's height in a Fenwick tree (estimated
until the block is drawn, then measured), and the modes heights depend on. No Textual here: the
view scrolls and draws, this says which block holds which line."""

from __future__ import annotations

from typing import Any

from ctxview.viewer.layout.heights import Heights
from ctxview.viewer.layout.outline import Block, Outline
from ctxview.viewer.render.blocks import FOLD_MESSAGE, FOLD_RESULT, FOLD_SUMMARY, estimate

Row = tuple[Any, ...]  # an outline row (OUTLINE_COLUMNS)


class TranscriptLayout:
    """The blocks of the loaded rows and their heights."""

    def __init__(self) -> None:
        self.outline = Outline()
        self.heights = Heights()
        self.stored_mode = False
        self.raw = False  # messages as their raw text, not rendered Markdown
        self.laid_width = 0  # the body width the heights were laid out for
        # block serial -> (block, measured height), applied after the render that measured it
        self.pending: dict[int, tuple[Block, int]] = {}
        self._discarded: Outline | None = None  # see reset

    @property
    def blocks(self) -> list[Block]:
        return self.outline.blocks

    def estimate(self, block: Block) -> int:
        return estimate(block, self.stored_mode)

    # The rows

    def reset(self, outline: Outline) -> None:
        """Another outline (a far jump loads another window of the session). The old one is
        freed a piece at a time (`free_discarded`): 200,000 blocks take tens of ms to free."""
        self._discarded = self.outline
        self.outline = outline
        self.heights = Heights()
        self.pending.clear()

    def free_discarded(self) -> None:
        """A piece of the outline a far jump replaced (all at once: 50 ms)."""
        if self._discarded:
            self._discarded.by_rid.clear()
            del self._discarded.blocks[-20000:]
            if not self._discarded.blocks:
                self._discarded = None

    def estimate_all(self) -> None:
        """Every height an estimate again (a new outline, width or mode)."""
        self.heights.rebuild([self.estimate(b) for b in self.blocks])

    def append(self, rows: list[Row]) -> list[Block]:
        """Rows past the last one; returns the new blocks (a call that got its result is laid
        out again)."""
        new, changed = self.outline.append(rows)
        for block in changed:
            block.touch()
            self.heights.set(block.index, self.estimate(block))
        for block in new:
            self.heights.append(self.estimate(block))
        return new

    def prepend(self, rows: list[Row], epoch: int) -> None:
        """Older rows (ending just before the first loaded one), starting in `epoch`; the heights
        of the blocks already laid out are kept."""
        old = self.heights.values()
        count = len(self.blocks)
        new = self.outline.prepend(rows, epoch)
        # The new blocks, then the old ones but those merged into a new call (a result whose
        # call was among the older rows: the head of the old blocks).
        merged = count + len(new) - len(self.blocks)
        self.heights.rebuild([*(self.estimate(b) for b in new), *old[merged:]])

    # Heights measured by drawing

    def measured(self, block: Block, height: int) -> bool:
        """A block drawn at `height`: True when it differs from its laid out one (to be applied
        by `commit`, outside of a render)."""
        if height == self.heights.get(block.index):
            return False
        self.pending[block.serial] = (block, height)
        return True

    def commit(self, top: int) -> int | None:
        """Give blocks their measured heights; returns how far the line at `top` moved (None when
        nothing was pending)."""
        pending, self.pending = self.pending, {}
        if not pending:
            return None
        shift = 0
        for block, height in pending.values():
            if block.index >= len(self.blocks) or self.blocks[block.index] is not block:
                continue  # merged away by a prepend
            start = self.heights.offset(block.index)
            delta = self.heights.set(block.index, height)
            if start < top:
                shift += delta
        return shift

    # Questions

    def block_at(self, line: int) -> tuple[Block, int] | None:
        """The block holding `line` and the line's row in it, or None past the last line."""
        if not self.blocks or line >= self.heights.total:
            return None
        index = self.heights.find(line)
        return self.blocks[index], line - self.heights.offset(index)

    def visible(self, top: int, height: int) -> list[Block]:
        """The blocks with a line in the `height` lines from `top`."""
        if not self.blocks:
            return []
        lo = self.heights.find(top)
        hi = self.heights.find(top + max(height - 1, 0))
        return self.blocks[lo : hi + 1]

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

    def screenful(self, outline: Outline, target: Block | None, height: int) -> list[Block]:
        """The blocks a first screen of `outline` shows, by their estimated heights, and as many
        again (a block drawn taller or shorter than estimated): from `target` down, or the
        tail's up."""
        room = 2 * max(height, 24)
        blocks = outline.blocks
        out = []
        if target is not None:
            for block in blocks[target.index :]:
                out.append(block)
                room -= self.estimate(block)
                if room <= 0:
                    break
            return out
        for block in reversed(blocks):
            out.append(block)
            room -= self.estimate(block)
            if room <= 0:
                break
        return out[::-1]
