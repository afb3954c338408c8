"""A long plain text folded to the view's width, never cut (the `x` screen's context as sent):
a Line-API view, so a context of 100,000 lines scrolls as fast as 100. Every character is on
screen once, in order: a line is folded by cells, a wide character never split."""

from __future__ import annotations

import bisect
import re

from rich.cells import cell_len
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

TAB_SIZE = 8
# C0 controls (but tab) and DEL shown as their control pictures: one cell each, never sent to
# the terminal as they are.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _picture(m: re.Match[str]) -> str:
    c = ord(m.group())
    return "\u2421" if c == 0x7F else chr(0x2400 + c)


def clean_line(line: str) -> str:
    return _CONTROLS.sub(_picture, line).expandtabs(TAB_SIZE)


def fold_starts(line: str, width: int) -> list[int]:
    """Where each row of `line` starts when folded to `width` cells (ASCII: by arithmetic)."""
    width = max(width, 2)
    if line.isascii():
        return list(range(0, max(len(line), 1), width))
    starts, used = [0], 0
    for i, ch in enumerate(line):
        w = cell_len(ch)
        if used + w > width and used:
            starts.append(i)
            used = 0
        used += w
    return starts


class WrappedText(ScrollView, can_focus=True):
    """Plain text, folded to the width; scrolls with the usual keys (ScrollView's)."""


    DEFAULT_CSS = """
    WrappedText { height: 1fr; overflow-x: hidden; scrollbar-gutter: stable; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        self._width = 0
        self._ends: list[int] = []  # cumulative rows after each line
        self._starts: dict[int, list[int]] = {}  # fold starts of the non-ASCII lines

    def set_text(self, text: str) -> None:
        self.lines = [clean_line(ln) for ln in text.split("\n")]
        self._width = 0
        self._layout()
        self.scroll_to(y=0, animate=False)

    @property
    def text_width(self) -> int:
        return max(self.scrollable_content_region.width, 2)

    def _layout(self) -> None:
        width = self.text_width
        if width == self._width and self._ends:
            return
        self._width = width
        self._starts.clear()
        total, ends = 0, []
        for i, line in enumerate(self.lines):
            if line.isascii():
                total += max(1, -(-len(line) // width))
            else:
                starts = self._starts[i] = fold_starts(line, width)
                total += len(starts)
            ends.append(total)
        self._ends = ends
        self.virtual_size = Size(width, total)

    def on_resize(self) -> None:
        self._layout()
        self.refresh()

    def row(self, y: int) -> str:
        """The text of row `y` of the folded text ('' past the end)."""
        if not self._ends or y >= self._ends[-1] or y < 0:
            return ""
        i = bisect.bisect_right(self._ends, y)
        first = self._ends[i - 1] if i else 0
        line, k = self.lines[i], y - first
        if i in self._starts:
            starts = self._starts[i]
            end = starts[k + 1] if k + 1 < len(starts) else len(line)
            return line[starts[k] : end]
        return line[k * self._width : (k + 1) * self._width]

    def render_line(self, y: int) -> Strip:
        self._layout()
        text = self.row(self.scroll_offset.y + y)
        style = self.rich_style
        return Strip([Segment(text, style)]).extend_cell_length(self._width, style)

    def screen_rows(self) -> list[str]:
        """The rows on screen now (for tests)."""
        top = self.scroll_offset.y
        return [self.row(top + y) for y in range(self.size.height)]
