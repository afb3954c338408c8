"""A transcript's lines as the Line API draws them: each block wrapped once into strips, cached
by what they depend on (the block's state, the width, the modes, the theme, the search's words),
and each screen line (a gutter, then a block's strip) cached by its cursor and hit marks too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.app import App
from textual.cache import LRUCache
from textual.strip import Strip

from ctxview.viewer.layout.outline import Block
from ctxview.viewer.layout.transcript_layout import TranscriptLayout
from ctxview.viewer.loading.bodies import Bodies
from ctxview.viewer.render.blocks import RenderContext, render_block
from ctxview.viewer.render.colours import Palette, palette_for
from ctxview.viewer.render.wrap import wrap_strips

GUTTER = 2  # the cursor's (or a hit's) mark, left of every line


class TranscriptLines:
    """The strips of one transcript's blocks and the lines of its screen."""

    def __init__(self, layout: TranscriptLayout, bodies: Bodies, *, digits: int,
                 elided: dict[int, tuple[int, int]],
                 agents: dict[str, tuple[str, str, int]]) -> None:  # fmt: skip
        """`elided` and `agents`: the loader's (rid -> (request, seq) of the results an elision
        stride took out; call_ref -> the sub-agent a call started), kept up to date in place."""
        self.layout = layout
        self.bodies = bodies
        self.digits = digits
        self.elided = elided
        self.agents = agents
        self.words: tuple[str, ...] = ()  # the search's words, marked in results
        self.strips: LRUCache[tuple[Any, ...], list[Strip]] = LRUCache(600)
        self.lines: LRUCache[tuple[Any, ...], Strip] = LRUCache(3000)
        self._palette: Palette | None = None
        self._palette_theme = ""

    def clear(self) -> None:
        self.strips.clear()
        self.lines.clear()

    def palette(self, app: App[Any]) -> Palette:
        # Asked for on every line drawn: `current_theme` looks the theme up in a list each
        # time, the theme's name is a plain attribute.
        name = app.theme
        if self._palette is None or self._palette_theme != name:
            self._palette = palette_for(app.current_theme, app.console.color_system)
            self._palette_theme = name
        return self._palette

    def key(self, block: Block, width: int, palette: Palette) -> tuple[Any, ...]:
        """What a block's lines depend on: the block's state, the width, the modes, the theme."""
        return (block.serial, block.version, width, self.layout.stored_mode, self.layout.raw,
                palette.name, self.words)  # fmt: skip

    def context(self, palette: Palette) -> RenderContext:
        return RenderContext(palette, self.layout.outline.epoch_of, self.layout.stored_mode,
                             self.digits, self.words, self.layout.raw, elided=self.elided,
                             extra={"agents": self.agents})  # fmt: skip

    def cached(self, block: Block, width: int, palette: Palette) -> list[Strip] | None:
        """A block's strips at `width` when they are drawn already."""
        return self.strips.get(self.key(block, width, palette))

    def wrap(self, block: Block, width: int, palette: Palette, console: Console,
             style: Style) -> list[Strip] | None:  # fmt: skip
        """A block's strips at `width`, drawn now, or None while its text loads (asked for)."""
        key = self.key(block, width, palette)
        data = self.bodies.data(block, self.layout.stored_mode)
        if data is None:
            return None
        strips = wrap_strips(render_block(block, data, self.context(palette), width), console,
                             width, style)  # fmt: skip
        self.strips[key] = strips
        return strips

    def line(self, block: Block, row: int, width: int, *, cursor: bool, hit: bool,
             palette: Palette, base: Style,
             strips_for: Callable[[Block, int], list[Strip] | None]) -> Strip:  # fmt: skip
        """Screen line `row` of `block`, `width` columns wide, its gutter marked."""
        key = (*self.key(block, width, palette), row, cursor, hit)
        cached = self.lines.get(key)
        if cached is not None:
            return cached
        body_width = max(width - GUTTER, 4)
        strips = strips_for(block, body_width)
        if strips is None:
            strip = (
                Strip([Segment("…", base + palette.dim)]).extend_cell_length(body_width, base)
                if row == 0
                else Strip.blank(body_width, base)
            )
        elif row < len(strips):
            strip = strips[row]
        else:
            strip = Strip.blank(body_width, base)
        if hit:
            gutter = Segment("» ", base + palette.hit)  # the line a search's hit landed on
        elif cursor:
            gutter = Segment("▌ ", base + palette.cursor)
        else:
            gutter = Segment(" " * GUTTER, base)
        out = Strip([gutter, *strip], GUTTER + strip.cell_length)
        if out.cell_length != width:
            out = out.crop_extend(0, width, base)
        if strips is not None:
            self.lines[key] = out
        return out
