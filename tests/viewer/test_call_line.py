"""A call's line in the viewer (`▸ tool summary`) is the exports' one-line summary
(src/ctxview/report/call_summary.py), except where the viewer has a form of its own, such as arguments
short enough to read whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxview.report.call_summary import args_summary
from ctxview.store.records import Event
from ctxview.themes import THEMES
from ctxview.viewer.layout.outline import Block
from ctxview.viewer.render.blocks import BlockData, RenderContext, render_block
from ctxview.viewer.render.colours import palette_for

PALETTE = palette_for(THEMES["ctxview-dark"].theme)


def call_line(tool: str, args: dict[str, Any]) -> str:
    block = Block("tool", 1, tool=tool)
    call = Event(0.0, "call", tool=tool, args=json.dumps(args), seq=1)
    lines = render_block(block, BlockData(call), RenderContext(PALETTE, lambda rid: None), 200)
    return lines[0].plain


# Codex's `rg`/`ls` runs, imported as grep/list: no pattern or path among their arguments.
CODEX_RG = {"command": ["bash", "-lc", 'rg -n "ollama" -n'], "workdir": "/home/u/chatbot-ui"}
# A Claude Code Edit the importer could not replay keeps its name and its long arguments.
CC_EDIT = {"file_path": "work/plan.md", "old_string": "x" * 300, "new_string": "y" * 300}


@pytest.mark.parametrize(("tool", "args", "shown"), [
    ("grep", CODEX_RG, json.dumps(CODEX_RG, sort_keys=True)),  # was an empty line
    ("list", {"command": ["bash", "-lc", "ls lib"]}, '{"command": ["bash", "-lc", "ls lib"]}'),
    ("Edit", CC_EDIT, "work/plan.md"),  # was the arguments' JSON, cut at 200 characters
    ("edit", {"old_string": "a", "new_string": "b"}, '{"new_string": "b", "old_string": "a"}'),
    ("read", {"path": "src/a.py", "offset": 10, "limit": 20}, "src/a.py 10 +20"),
    ("grep", {"pattern": "TODO", "path": "src"}, "TODO src"),
])  # fmt: skip
def test_the_viewer_shows_the_shared_summary(tool: str, args: dict[str, Any], shown: str) -> None:
    assert args_summary(tool, args) == shown
    assert call_line(tool, args) == f"▸ {tool} {shown}"


def test_short_arguments_read_whole_in_the_viewer() -> None:
    # The summary picks the query; the viewer shows every argument while they fit on the line.
    args = {"max_results": 4, "query": "select:TaskCreate,SendMessage"}
    assert args_summary("ToolSearch", args) == "select:TaskCreate,SendMessage"
    assert call_line("ToolSearch", args) == f"▸ ToolSearch {json.dumps(args, sort_keys=True)}"
