"""A screen's title line: a title that gives way (cut with an ellipsis) so that what follows it,
the session's id and state, always shows whole, at any width."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.widgets import Static


def fit_title(title: str, tail: str, width: int) -> str:
    """`title` then `tail` in `width` cells: the title cut with "…" when both do not fit; the
    tail cut too only when it alone is wider than the line."""
    if width <= 0 or cell_len(title) + cell_len(tail) <= width:
        return title + tail
    room = width - cell_len(tail)
    if room < 2:  # no room for a letter of the title and its ellipsis: the tail, cut
        return set_cell_size(tail.lstrip(" ·"), width - 1).rstrip() + "…"
    return set_cell_size(title, room - 1).rstrip() + "…" + tail


class TitleLine(Static):
    """One line: a title, then a tail that is never pushed out of sight."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title_part = ""
        self.tail = ""

    def show(self, title: str, tail: str = "") -> None:
        if (title, tail) != (self.title_part, self.tail):
            self.title_part, self.tail = title, tail
            self.refresh()

    def render(self) -> Text:
        return Text(fit_title(self.title_part, self.tail, self.content_region.width), end="")

    def on_resize(self) -> None:
        self.refresh()
