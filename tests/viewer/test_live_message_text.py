"""Issue 16 §4.1: a message whose text arrives in a later record than its first appears live.

Claude Code writes one record per content block of an assistant message (the same message id).
An import that reaches the end of what is written stores the message as it is so far (its
thinking, say) and, when the next record continues it, replaces that event by the whole
message at the same seq. The live view must show the replacement: it held the first version and
read only rows past its last one, so the text never came until the viewer was reopened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from viewer_helpers import ready, settle, wait_for

from ctxview.importers.runner import FileImporter
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp

SIZE = (100, 30)
SID = "6f1c2b9e-0000-4000-8000-00000000a416"
TEXT = "Perfect! I've updated the README with the upgrade steps."
LATER = "And the changelog says so too, in one line."


def _records(cwd: Path) -> list[dict[str, Any]]:
    """A prompt, then one assistant message in three records (thinking, text, text), as
    Claude Code writes them."""
    common = {"sessionId": SID, "cwd": str(cwd), "isSidechain": False}

    def part(n: int, block: dict[str, Any]) -> dict[str, Any]:
        return {**common, "type": "assistant", "uuid": f"a{n}", "parentUuid": f"a{n - 1}",
                "timestamp": f"2026-12-01T07:00:0{n}Z",
                "message": {"id": "msg_1", "role": "assistant", "model": "m",
                            "content": [block], "usage": {"input_tokens": 9,
                                                          "output_tokens": n}}}  # fmt: skip

    return [
        {**common, "type": "user", "uuid": "a0", "timestamp": "2026-12-01T07:00:00Z",
         "message": {"role": "user", "content": "Update the README, please."}},
        part(1, {"type": "thinking", "thinking": "The README needs the upgrade command."}),
        part(2, {"type": "text", "text": TEXT}),
        part(3, {"type": "text", "text": LATER}),
    ]  # fmt: skip


class Transcript:
    """A Claude Code transcript written a record at a time, imported after each as `ctxview
    follow` does (a live step: what is there so far, the last message provisionally)."""

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / f"{SID}.jsonl"
        self.path.write_text("")
        self.records = _records(tmp)
        self.store = tmp / "store.db"
        self.importer: FileImporter | None = None

    async def open(self) -> None:
        self.writer = await Writer.open(self.store)
        self.importer = FileImporter(self.writer, self.path)

    async def write(self, n: int) -> None:
        with self.path.open("a") as f:
            for rec in self.records[:n]:
                f.write(json.dumps(rec) + "\n")
        self.records = self.records[n:]
        assert self.importer is not None
        await self.importer.step(live=True)

    async def close(self) -> None:
        await self.writer.close()


async def test_text_arriving_in_a_later_record_appears_at_the_live_tail(tmp_path: Path) -> None:
    t = Transcript(tmp_path)
    await t.open()
    try:
        await t.write(2)  # the prompt, and the message's thinking only
        async with CtxviewApp(t.store, session=f"cc-{SID}").run_test(size=SIZE) as pilot:
            view = await ready(pilot)
            assert "thinking" in view.screen_text() and TEXT not in view.screen_text()
            await t.write(1)  # its text: the same message, replaced at its seq
            await wait_for(pilot, lambda: TEXT in view.screen_text())
            await t.write(1)  # more text of it
            await wait_for(pilot, lambda: LATER in view.screen_text())
            await settle(pilot, view)
            assert len(view.blocks) == 2 and view.following
            screen = view.screen_text()
            assert screen.count(TEXT) == 1 and screen.count(LATER) == 1
    finally:
        await t.close()


async def test_text_that_arrived_while_scrolled_up_is_there_at_the_tail(tmp_path: Path) -> None:
    t = Transcript(tmp_path)
    t.records[1:1] = [
        {**t.records[0], "uuid": f"p{n}", "message": {"role": "user", "content": f"prompt {n}"}}
        for n in range(40)
    ]  # rows enough to scroll away from the tail
    await t.open()
    try:
        await t.write(42)
        async with CtxviewApp(t.store, session=f"cc-{SID}").run_test(size=SIZE) as pilot:
            view = await ready(pilot)
            await pilot.press("home")
            assert not view.following
            before = view.outline.last_seq
            await t.write(1)
            last = view.blocks[-1]
            # Read while scrolled up (the message is not on screen): the view's copy of it.
            await wait_for(pilot, lambda: TEXT in (getattr(view.bodies.events.get(last.seq), "text",
                                                           None) or ""))  # fmt: skip
            assert not view.following
            await pilot.press("end")
            await wait_for(pilot, lambda: TEXT in view.screen_text())
            # The replacement keeps its seq: no new row, nothing counted as new.
            assert view.outline.last_seq == before and view.new_rows == 0
            assert view.blocks[-1] is last
    finally:
        await t.close()
