"""Cell widths as terminals draw them, for the characters where Rich counts otherwise.

Rich 15 counts an emoji skin-tone modifier (U+1F3FB-U+1F3FF) as zero cells, joined to the emoji
before it; tmux 3.3 and xterm.js (the terminal textual-serve draws in the browser) draw it as a
wide character of its own. Rich also joins emoji around a zero-width joiner (U+200D) into one
two-cell glyph; xterm.js draws each emoji of the sequence. A row wrapped by Rich's count then ran
past the edge, and its last characters were lost (issue 10.1). Counted as these terminals draw
them, a terminal that does join shows a gap at the row's end instead: never a lost character.
"""

from __future__ import annotations

from typing import Any

from rich import cells, segment
from rich._unicode_data import load

# (first, last) code points Rich counts as 0 cells that terminals draw as 2.
TERMINAL_WIDE = ((0x1F3FB, 0x1F3FF),)
ZWJ, ZWNJ = "\u200d", "\u200c"  # ZWNJ: zero cells to Rich too, and joins nothing

_rich_cell_len = cells._cell_len
_rich_split_graphemes = cells.split_graphemes


def _cell_len(text: str, unicode_version: str = "auto") -> int:
    if ZWJ in text:  # measured like the same text whose joiners join nothing
        text = text.replace(ZWJ, ZWNJ)
    return _rich_cell_len(text, unicode_version)


def _split_graphemes(text: str, unicode_version: str = "auto") -> tuple[list[Any], int]:
    if ZWJ in text:  # the same length: the spans' indices hold for the text itself
        text = text.replace(ZWJ, ZWNJ)
    return _rich_split_graphemes(text, unicode_version)


def measure_like_terminals() -> bool:
    """Make Rich's width table (the one `cell_len` reads) count TERMINAL_WIDE as 2 cells;
    True when the table is as terminals draw it afterwards. Idempotent."""
    widths = load("auto").widths
    if not isinstance(widths, list):  # another Rich: leave its table alone
        return False
    changed = False
    for first, last in TERMINAL_WIDE:
        for i, (start, end, width) in enumerate(widths):
            if start == first and end == last and width == 0:
                widths[i] = (start, end, 2)
                changed = True
    # Rich's own callers (cell_len, cached_cell_len, chop_cells, splitting) look these up in
    # the module when called.
    if cells._cell_len is not _cell_len:
        cells._cell_len = _cell_len
        cells.split_graphemes = _split_graphemes
        changed = True
    if changed:  # widths measured before are cached
        cells.get_character_cell_size.cache_clear()
        cells.cached_cell_len.cache_clear()
        segment.Segment._split_cells.cache_clear()
    return all(cells.get_character_cell_size(chr(first)) == 2 for first, _ in TERMINAL_WIDE)
