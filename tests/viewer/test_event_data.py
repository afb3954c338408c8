"""An event's data column that is not a JSON object (a store pulled from elsewhere or edited by
hand) reads as no data: the viewer draws the event instead of stopping on `.get` of a list."""

from __future__ import annotations

import pytest

from ctxview.store.records import Event, SessionRow
from ctxview.themes import THEMES
from ctxview.viewer.layout.outline import Block
from ctxview.viewer.render.blocks import BlockData, RenderContext, render_block
from ctxview.viewer.render.colours import palette_for

PALETTE = palette_for(THEMES["ctxview-dark"].theme)
NOT_OBJECTS = ["[1, 2]", "3", '"rows"', "null", "{not json"]


@pytest.mark.parametrize("data", NOT_OBJECTS)
def test_data_that_is_not_an_object_reads_as_none(data: str) -> None:
    assert Event(0.0, "message", data=data).extra == {}
    row = SessionRow("s1", "", "/w", "claude", None, None, None, None, 0.0, None, "{}", 1, data)
    assert row.extra == {}


@pytest.mark.parametrize("data", NOT_OBJECTS)
def test_a_compaction_whose_data_is_not_an_object_is_drawn(data: str) -> None:
    ev = Event(0.0, "compaction", text="The summary.", data=data, seq=1)
    lines = render_block(
        Block("boundary", 1), BlockData(ev), RenderContext(PALETTE, lambda r: None), 80
    )
    text = "\n".join(line.plain for line in lines)
    assert "The summary." in text
    assert "Files read before this summary" not in text


def test_a_compactions_files_read_table_is_drawn_from_its_data() -> None:
    data = '{"rows": [{"path": "src/a.py", "lines": "1-40", "sha": "ab12", "rid": 3}]}'
    ev = Event(0.0, "compaction", text="The summary.", data=data, seq=1)
    lines = render_block(
        Block("boundary", 1), BlockData(ev), RenderContext(PALETTE, lambda r: None), 80
    )
    text = "\n".join(line.plain for line in lines)
    assert "Files read before this summary" in text and "src/a.py" in text
