"""A search's hit on its line: the transcript lands on the line of the hit's block that holds one
of the search's words, opening what hides it. Waits are on the loader's signals (rows loaded,
bodies fetched), never a poll."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.strip import Strip

from ctxview.viewer.layout.outline import Block, Outline
from ctxview.viewer.loading.bodies import Bodies
from ctxview.viewer.loading.signal import Signal

FAR_WAIT = 5.0  # seconds for a far jump's rows to come in
TEXT_WAIT = 2.0  # seconds for a block's text (and an opened elision's stored text)


class HitHost(Protocol):
    """What landing on a hit asks of the transcript view."""

    @property
    def outline(self) -> Outline: ...
    @property
    def stored_mode(self) -> bool: ...
    @property
    def bodies(self) -> Bodies: ...
    @property
    def rows_in(self) -> Signal: ...

    def far(self, seq: int, rid: int | None = None) -> None: ...
    def move_to(self, block: Block, *, top: bool = False) -> None: ...
    def foldable(self, block: Block) -> bool: ...
    def toggle_fold(self, block: Block) -> None: ...
    def toggle_detail(self, block: Block) -> None: ...
    def toggle_elision(self, block: Block) -> None: ...
    def block_strips(self, block: Block) -> list[Strip] | None: ...
    def mark_hit(self, block: Block, row: int) -> None: ...


async def show_hit(view: HitHost, seq: int, words: tuple[str, ...]) -> None:
    """Land on the line of event `seq`'s block that holds one of `words`, and mark it. What
    hides the line is opened: the block's fold, its thinking or call detail, an elided middle;
    what did not help is folded again."""
    block = view.outline.block_at_seq(seq)
    if block is None:
        view.far(seq)  # not loaded: the rows around it first
        block = await view.rows_in.until(lambda: view.outline.block_at_seq(seq), FAR_WAIT)
        if block is None:
            return
    view.move_to(block, top=True)
    row = await _row_of(view, block, words)
    opened: list[Callable[[Block], None]] = []
    steps: list[tuple[Callable[[Block], bool], Callable[[Block], None]]] = [
        (lambda b: view.foldable(b) and not b.open, view.toggle_fold),
        (lambda b: b.kind in ("message", "tool") and not b.detail_open, view.toggle_detail),
        (lambda b: b.kind == "tool" and b.capped and not b.elision_open
         and not view.stored_mode, view.toggle_elision),
    ]  # fmt: skip
    for can, toggle in steps:
        if row is not None:
            break
        if can(block):
            toggle(block)
            opened.append(toggle)
            row = await _row_of(view, block, words)
    if row is None:
        for undo in reversed(opened):
            undo(block)
        row = 0
    view.mark_hit(block, row)


async def _row_of(view: HitHost, block: Block, words: tuple[str, ...]) -> int | None:
    """The first row of the block's lines (as drawn now) that holds one of `words`, once its
    text has loaded (and an opened elision's stored text)."""
    low = [w.lower() for w in words]

    def drawn() -> list[Strip] | None:
        strips = view.block_strips(block)  # asks for what is missing
        waiting = (
            block.elision_open and block.rid is not None and block.rid not in view.bodies.stored
        )
        return strips if not waiting else None

    strips = await view.bodies.signal.until(drawn, TEXT_WAIT) or view.block_strips(block)
    if not strips or not low:
        return None
    for row, strip in enumerate(strips):
        text = strip.text.lower()
        if any(w in text for w in low):
            return row
    return None
