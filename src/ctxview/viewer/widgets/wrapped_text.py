"""A long plain text folded to the view's width, never cut (the `x` screen's context as sent):
a Line-API view, so a context of 100,000 lines scrolls as fast as 100. Every character is on
screen once, in order: a line is wrapped after a space where one fits (a row keeps its trailing
space), folded by cells inside a word longer than the row, a wide character never split."""

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
    """Where each row of `line` starts when wrapped to `width` cells: after the last space that
    fits, or at the width inside a longer word (it was always at the width: words cut in two)."""
    width = max(width, 2)
    if line.isascii():
        starts, s, n = [0], 0, len(line)
        while n - s > width:
            space = line.rfind(" ", s, s + width)
            s = space + 1 if space > s else s + width
            starts.append(s)
        return starts
    starts, used, start, after_space = [0], 0, 0, -1
    cells = [cell_len(ch) for ch in line]
    for i, w in enumerate(cells):
        if used + w > width and used:
            carried = sum(cells[after_space:i]) if after_space > start else width
            if carried + w <= width:  # the row ends after its last space; the word moves down
                start, used = after_space, carried
            else:  # a word longer than a row: folded here
                start, used = i, 0
            starts.append(start)
        used += w
        if line[i] == " ":
            after_space = i + 1
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
            if len(line) <= width and (line.isascii() or cell_len(line) <= width):
                total += 1  # most lines: one row, nothing to keep
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
        starts = self._starts.get(i)
        if starts is None:
            return line
        end = starts[k + 1] if k + 1 < len(starts) else len(line)
        return line[starts[k] : end]

    def render_line(self, y: int) -> Strip:
        self._layout()
        text = self.row(self.scroll_offset.y + y)
        style = self.rich_style
        return Strip([Segment(text, style)]).extend_cell_length(self._width, style)

    def screen_rows(self) -> list[str]:
        """The rows on screen now (for tests)."""
        top = self.scroll_offset.y
        return [self.row(top + y) for y in range(self.size.height)]
