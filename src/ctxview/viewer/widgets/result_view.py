"""The full stored text of one result: Line API (a 100,000-line result scrolls smoothly, only
visible lines are rendered), line numbers, search with n/N, syntax colour per visible window."""

from __future__ import annotations

import re
from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ctxview.rules.ids import ID_IN_TEXT
from ctxview.viewer.render.blocks import plain
from ctxview.viewer.render.colours import Palette, palette_for
from ctxview.viewer.render.diff import diff_lines
from ctxview.viewer.render.highlight import highlight_lines, lexer_for

CHUNK = 200  # lines lexed together: pygments sees a window, never the whole text
READ_LINE = re.compile(r"^(\d+): ")


class ResultView(ScrollView, can_focus=True):
    def __init__(self, text: str, *, path: str | None = None, read: bool = False,
                 diff: bool = False,
                 is_result: Callable[[int], bool] | None = None,
                 id: str | None = None) -> None:  # fmt: skip
        super().__init__(id=id)
        # Ids in the text that name a result of the session are links (a click opens them).
        self.is_result = is_result or (lambda rid: False)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        self.numbers: list[str] = []
        if read:
            # A read's stored text is `n: line`: the numbers go to the gutter.
            code = []
            for line in lines:
                m = READ_LINE.match(line)
                self.numbers.append(m.group(1) if m else "")
                code.append(line[m.end() :] if m else line)
            lines = code
        self.lines = lines
        self.path = path if lexer_for(path) is not None else None
        # An edit's stored text is a unified diff: coloured as one, the code by its language.
        self.diff = diff
        self.diff_path = path
        last = self.numbers[-1] if self.numbers else str(len(lines))
        self.number_width = max(len(last), 3) + 1
        self.matches: list[int] = []
        self.match = -1
        self.needle = ""
        self._chunks: LRUCache[tuple[int, str], list[Text]] = LRUCache(64)
        width = max((len(x) for x in lines), default=0) + self.number_width + 2
        self.virtual_size = Size(width, len(lines))

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme, self.app.console.color_system)

    def _line_text(self, index: int) -> Text:
        if self.path is None and not self.diff:
            return plain(self.lines[index])
        pal = self.palette
        start = index - index % CHUNK
        key = (start, pal.name)
        chunk = self._chunks.get(key)
        if chunk is None:
            window = self.lines[start : start + CHUNK]
            if self.diff:
                chunk = diff_lines(window, self.diff_path, pal)
            else:
                chunk = highlight_lines(window, self.path, pal.pygments) or []
            self._chunks[key] = chunk
        return (
            chunk[index - start].copy() if index - start < len(chunk) else plain(self.lines[index])
        )

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self.lines):
            return Strip.blank(width, base)
        pal = self.palette
        number = self.numbers[index] if self.numbers else str(index + 1)
        gutter = Strip([Segment(number.rjust(self.number_width - 1) + " ", base + pal.dim)])
        text = self._line_text(index)
        if self.needle:
            low = self.lines[index].lower()
            current = self.match >= 0 and self.matches[self.match] == index
            style = Style(reverse=True) if current else Style(bgcolor="yellow", color="black")
            pos = low.find(self.needle)
            while pos >= 0:
                text.stylize(style, pos, pos + len(self.needle))
                pos = low.find(self.needle, pos + len(self.needle))
        if "#" in self.lines[index]:
            pal_link = pal.link
            for m in ID_IN_TEXT.finditer(self.lines[index]):
                rid = int(m.group(1), 16)
                if self.is_result(rid):
                    style = pal_link + Style(meta={"@click": f"screen.open_rid({rid})"})
                    text.stylize(style, m.start(), m.end())
        text.end = ""
        body = Strip(list(text.render(self.app.console))).apply_style(base)
        body = body.crop_extend(scroll_x, scroll_x + width - self.number_width, base)
        return Strip.join([gutter, body]).crop_extend(0, width, base)

    # Keys jump without animation: an animated scroll through 100,000 lines would draw (and
    # colour) every window on the way.

    def action_scroll_home(self) -> None:
        self.scroll_to(0, 0, animate=False, immediate=True)

    def action_scroll_end(self) -> None:
        self.scroll_to(0, self.max_scroll_y, animate=False, immediate=True)

    def action_page_down(self) -> None:
        self.scroll_to(y=self.scroll_offset.y + self.size.height, animate=False, immediate=True)

    def action_page_up(self) -> None:
        self.scroll_to(y=self.scroll_offset.y - self.size.height, animate=False, immediate=True)

    # Search inside

    def search(self, needle: str) -> int:
        """Find every line holding `needle` (case-insensitive); go to the first; the count."""
        self.needle = needle.lower()
        self.matches = (
            [i for i, line in enumerate(self.lines) if self.needle in line.lower()]
            if self.needle
            else []
        )
        self.match = -1
        self._chunks.clear()
        if self.matches:
            self.next_match(1)
        self.refresh()
        return len(self.matches)

    def next_match(self, step: int) -> None:
        if not self.matches:
            return
        top = self.scroll_offset.y
        if self.match < 0:
            self.match = next((i for i, n in enumerate(self.matches) if n >= top), 0)
        else:
            self.match = (self.match + step) % len(self.matches)
        line = self.matches[self.match]
        self.scroll_to(y=max(line - 3, 0), animate=False, immediate=True, force=True)
        self.refresh()
