"""Issue 10.2: an image in a tool result is not dropped without a trace: its block shows a
placeholder with the image's type and size, in the model's view and in the stored text.

tests/fixtures/viewer/claude_2_1_328_image_result.jsonl is a real transcript: the pinned Claude
Code 2.1.328, run headless against the scripted model (tests/agents/fake_anthropic.py), Read a
64×48 PNG; its tool_result holds the image block (792 base64 characters: 594 bytes)."""

from __future__ import annotations

import json
from pathlib import Path

from viewer_helpers import block_by_rid, ready, settle

from ctxview.importers.runner import import_file
from ctxview.store import Reader, Writer
from ctxview.viewer.app import CtxviewApp

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "viewer" / (
    "claude_2_1_328_image_result.jsonl")  # fmt: skip


def _image_block() -> tuple[str, int]:
    """The tool_result's image: its media type and base64 length, read from the fixture."""
    for line in FIXTURE.read_text().splitlines():
        rec = json.loads(line)
        content = rec.get("message", {}).get("content")
        if rec.get("type") == "user" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result" and isinstance(block["content"], list):
                    [image] = [b for b in block["content"] if b["type"] == "image"]
                    return image["source"]["media_type"], len(image["source"]["data"])
    raise AssertionError("the fixture has no image in a tool result")


async def test_an_image_in_a_result_shows_its_type_and_size(tmp_path: Path) -> None:
    media, b64 = _image_block()
    assert (media, b64) == ("image/png", 792)
    store = tmp_path / "store.db"
    writer = await Writer.open(store)
    try:
        await import_file(writer, FIXTURE)
    finally:
        await writer.close()
    async with await Reader.open(store) as reader:
        [row] = await reader.sessions()
        [result] = [e for e in await reader.events(row.id) if e.kind == "result"]
    assert result.tool == "read" and result.rid is not None
    want = f"▣ image  {media} · {b64 * 3 // 4} bytes"  # 594 bytes
    async with CtxviewApp(store, session=row.id, watch=False).run_test(size=(100, 30)) as pilot:
        view = await ready(pilot)
        block = block_by_rid(view, result.rid)
        view.move_to(block)
        if not block.open:
            await pilot.press("enter")
        await settle(pilot, view)
        shown = view.block_text(block)
        assert want in shown, shown
        assert "base64" not in shown and "iVBOR" not in shown, shown
        assert want in view.screen_text(), "the placeholder is not on the screen"
        await pilot.press("m")  # the stored text: the same placeholder
        await settle(pilot, view)
        stored = view.block_text(block)
        assert want in stored and "base64" not in stored, stored
