"""A block's lines of styled text to Strips of exactly one width: wrapped, never cut.

Pure (a console for measuring, no screen): the transcript view calls it for each block, and the
property test calls it directly over random texts and widths."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text
from textual.strip import Strip

TAB_SIZE = 8


def wrap_strips(lines: Iterable[Text], console: Console, width: int, base: Style) -> list[Strip]:
    """Each Text folded to lines of at most `width` cells, padded to `width` with `base`.

    Word-wrapped where there is a space, folded inside a word longer than the width; a
    character never falls off the end (a line rich measures wider than `width` is folded again
    rather than cropped)."""
    width = max(width, 2)  # a wide (CJK) character needs two cells
    strips: list[Strip] = []
    for text in lines:
        if not text.plain:
            strips.append(Strip.blank(width, base))
            continue
        if text.style:
            # Rich's wrap drops a Text's base style when it has no spans: make it one.
            text = text.copy()
            text.spans.insert(0, Span(0, len(text), text.style))
            text.style = ""
        for line in text.wrap(console, width, overflow="fold", no_wrap=False, tab_size=TAB_SIZE):
            for part in _fit(line, width):
                part.end = ""
                # One Strip per line (each Strip carries caches: make as few as possible).
                segments = list(Segment.apply_style(part.render(console), base))
                used = part.cell_len
                if used < width:
                    segments.append(Segment(" " * (width - used), base))
                strips.append(Strip(segments, width))
    return strips


def _fit(line: Text, width: int) -> list[Text]:
    """A wrapped line that still measures wider than `width` (rich's fold can leave one), cut
    by cells into pieces that fit, so nothing is cropped."""
    if line.cell_len <= width:
        return [line]
    out: list[Text] = []
    start = 0
    used = 0
    plain = line.plain
    for i, ch in enumerate(plain):
        w = Text(ch).cell_len
        if used + w > width and i > start:
            out.append(line[start:i])
            start, used = i, 0
        used += w
    out.append(line[start:])
    return out
