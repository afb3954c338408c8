"""Cell widths as terminals draw them, for the characters where Rich counts otherwise.

Rich 15 counts an emoji skin-tone modifier (U+1F3FB-U+1F3FF) as zero cells, joined to the emoji
before it; tmux 3.3 and xterm.js (the terminal textual-serve draws in the browser) draw it as a
wide character of its own. A row wrapped by Rich's count then ran two cells past the edge per
modifier, and its last characters were lost (issue 10.1). Counted as these terminals draw it, a
terminal that does join the pair shows a two-cell gap at the row's end instead: never a lost
character.
"""

from __future__ import annotations

from rich import cells, segment
from rich._unicode_data import load

# (first, last) code points Rich counts as 0 cells that terminals draw as 2.
TERMINAL_WIDE = ((0x1F3FB, 0x1F3FF),)


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
    if changed:  # widths measured before are cached
        cells.get_character_cell_size.cache_clear()
        cells.cached_cell_len.cache_clear()
        segment.Segment._split_cells.cache_clear()
    return all(cells.get_character_cell_size(chr(first)) == 2 for first, _ in TERMINAL_WIDE)
