"""Every character of a block's text is on screen once, in order, at any width, in the model's
view and in the stored text (issue 10.1). A property over random texts, a fixed seed."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.style import Style

from ctxview.store.records import Event
from ctxview.themes import THEMES
from ctxview.viewer.layout.outline import Block
from ctxview.viewer.render.blocks import BlockData, RenderContext, render_block
from ctxview.viewer.render.colours import palette_for
from ctxview.viewer.render.wrap import wrap_strips

PALETTE = palette_for(THEMES["ctxview-dark"].theme)
CONSOLE = Console(width=300, color_system="truecolor", legacy_windows=False)
SPACE = re.compile(r"\s+")

# The kinds of characters that wrap differently: narrow, wide (CJK, emoji), zero-width
# (combining marks), and the whitespace a wrap may break at (a tab expands).
ASCII = [chr(c) for c in range(0x21, 0x7F)]
WIDE = [chr(c) for c in range(0x4E00, 0x4E40)] + [chr(c) for c in range(0x1F600, 0x1F620)]
MARKS = [chr(c) for c in range(0x0300, 0x0310)]
glyphs = st.sampled_from(ASCII * 3 + WIDE + MARKS)
word = st.one_of(
    st.text(glyphs, min_size=1, max_size=12),
    st.text(glyphs, min_size=60, max_size=300),  # longer than a line
)
line = st.lists(st.tuples(word, st.sampled_from([" ", " ", "\t", "  "])), max_size=12).map(
    lambda parts: "".join(w + sep for w, sep in parts).rstrip()
)
texts = st.lists(line, min_size=1, max_size=12).map("\n".join)


def squeeze(text: str) -> str:
    """The text without its whitespace: wrapping may turn a space into a line break and a tab
    into spaces, but must never drop, repeat or move a character."""
    return SPACE.sub("", text)


def screen_of(block: Block, data: BlockData, width: int, *, stored: bool) -> str:
    ctx = RenderContext(PALETTE, lambda rid: None, stored_mode=stored)
    lines = render_block(block, data, ctx, width)
    strips = wrap_strips(lines, CONSOLE, width, Style())
    assert all(s.cell_length == width for s in strips)
    return "".join(s.text for s in strips)


def tool_block(text: str) -> tuple[Block, BlockData]:
    n = text.count("\n") + 1
    block = Block("tool", 1, tool="bash", rseq=2, rid=0x1000, rkind="full", shown_lines=n + 1,
                  stored_lines=n, open=True)  # fmt: skip
    call = Event(0.0, "call", tool="bash", args='{"command": "cat f"}', seq=1)
    result = Event(0.0, "result", tool="bash", rid=0x1000, rkind="full", seq=2)
    return block, BlockData(call, result, shown="[#1000 bash]\n" + text, stored=text)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(text=texts, width=st.integers(20, 250))
def test_a_results_text_is_all_on_screen(text: str, width: int) -> None:
    block, data = tool_block(text)
    head = squeeze("▸ bash cat f")
    model = squeeze(screen_of(block, data, width, stored=False))
    assert model == head + squeeze("[#1000 bash]") + squeeze(text)
    stored = squeeze(screen_of(block, data, width, stored=True))
    assert stored == head + squeeze("[#1000 bash]  stored text") + squeeze(text)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(text=texts, width=st.integers(20, 250))
def test_a_messages_raw_text_is_all_on_screen(text: str, width: int) -> None:
    block = Block("message", 1, role="user", text_lines=text.count("\n") + 1, open=True)
    data = BlockData(Event(0.0, "message", role="user", text=text, seq=1))
    ctx = RenderContext(PALETTE, lambda rid: None, raw=True)
    strips = wrap_strips(render_block(block, data, ctx, width), CONSOLE, width, Style())
    assert squeeze("".join(s.text for s in strips)) == squeeze("● user") + squeeze(text)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(text=texts, width=st.integers(20, 250))
def test_wrapping_keeps_every_rendered_character(text: str, width: int) -> None:
    """Markdown changes the text (a heading loses its #), the wrap must not: what the renderer
    made is on screen whole."""
    block = Block("message", 1, role="assistant", text_lines=text.count("\n") + 1, open=True)
    data = BlockData(Event(0.0, "message", role="assistant", text=text, seq=1))
    ctx = RenderContext(PALETTE, lambda rid: None)
    lines = render_block(block, data, ctx, width)
    made = squeeze("".join(t.plain for t in lines))
    strips = wrap_strips(lines, CONSOLE, width, Style())
    assert all(s.cell_length == width for s in strips)
    assert squeeze("".join(s.text for s in strips)) == made
