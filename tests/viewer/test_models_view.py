"""Issue 16 §1.11: the model's view is exactly the text the model got. What the viewer says
about it (a link's result is no longer in context, where a stub leads, that the elided middle
opens here) is an annotation beside the text: dim, italic, after it, marked as a note; it was
"[#100c recall #1005 (not in context since boundary 1) lines 1-5 of 1501]", inside the bracket."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from store_fixture import Filled, fill
from textual.strip import Strip
from viewer_helpers import ready, settle

from ctxview.engine.session import Session
from ctxview.store import Reader, Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.render.links import is_note

SIZE = (250, 60)  # wide: no line of the fixture wraps, so a row is a line


async def _filled(tmp: Path) -> Filled:
    filled = await fill(tmp)
    async with await Writer.open(filled.store) as writer:
        s = await Session.resume(writer, filled.session_id)
        # After the boundary: a recall and a stub of results from before it.
        await s.run("recall", {"id": s.ref(filled.ids["capped"]), "offset": 1, "limit": 3})
        filled.ids["late_recall"] = s.last.rid  # type: ignore[union-attr]
        await s.message("assistant", f"See {s.ref(filled.ids['read'])} and "
                        f"{s.ref(filled.ids['grep'])} for it.")  # fmt: skip
    return filled


def _row_text(strip: Strip, model: bool) -> str:
    """A drawn row's text; with `model`, without its annotations."""
    return "".join(seg.text for seg in strip if not (model and is_note(seg.style))).rstrip()


def _plain(text: str) -> str:
    """The text as drawn: ANSI colour codes are drawn as colour, not as characters."""
    return Text.from_ansi(text).plain if "\x1b" in text else text


async def test_every_results_model_view_is_the_text_the_model_got(tmp_path: Path) -> None:
    filled = await _filled(tmp_path)
    async with await Reader.open(filled.store) as reader:
        events = [e for e in await reader.events(filled.session_id) if e.rid is not None]
        shown = await reader.shown(filled.session_id, [e.rid for e in events if e.rid])
    assert len(shown) >= 12
    async with CtxviewApp(filled.store, session=filled.session_id, watch=False).run_test(
        size=SIZE
    ) as pilot:
        view = await ready(pilot)
        notes_seen = []
        for rid, text in shown.items():
            block = view.outline.block_of(rid)
            assert block is not None
            if view.foldable(block) and not block.open:
                view.toggle_fold(block)
            view.move_to(block, top=True)
            await settle(pilot, view)
            strips = view._strips_for(block, view.body_width)
            assert strips is not None
            rows = [_row_text(s, model=True) for s in strips]
            drawn = [_row_text(s, model=False) for s in strips]
            # The result's rows start at its bracket (the call's line comes before it) and end
            # before the block's blank line.
            bracket = text.split("\n", 1)[0]
            start = rows.index(_plain(bracket).rstrip())
            body = rows[start : start + text.count("\n") + 1]
            want = [_plain(line).rstrip() for line in text.split("\n")]
            if len(want) > 2000:  # an opened block shows 2,000 lines; the rest is a recall away
                want = want[:2000]
                body = body[:2000]
            assert body == want, (hex(rid), body[:5], want[:5])
            notes_seen += [d for d, r in zip(drawn, rows, strict=True) if d != r]
        # The annotations are there, beside the text: none is lost by this.
        assert any("not in context since boundary 1" in n for n in notes_seen), notes_seen
        assert any("↵ leads to" in n for n in notes_seen), notes_seen
        assert any("click or e opens the middle here" in n for n in notes_seen), notes_seen


async def test_a_stale_link_in_a_recall_is_annotated_beside_its_bracket(tmp_path: Path) -> None:
    filled = await _filled(tmp_path)
    async with CtxviewApp(filled.store, session=filled.session_id, watch=False).run_test(
        size=SIZE
    ) as pilot:
        view = await ready(pilot)
        block = view.outline.block_of(filled.ids["late_recall"])
        assert block is not None
        await settle(pilot, view)
        strips = view._strips_for(block, view.body_width)
        assert strips is not None
        head = next(s for s in strips if "recall #" in s.text and s.text.lstrip().startswith("["))
        model = _row_text(head, model=True)
        assert model.endswith(" lines 1-3 of 1501]"), model  # the bracket, as the model got it
        note = "".join(seg.text for seg in head if is_note(seg.style))
        assert "not in context since boundary 1" in note
        assert all(seg.style.italic for seg in head if is_note(seg.style) and seg.text.strip())
        # A message's words likewise: the note after the line, not after the id.
        message = view.blocks[-1]
        text = view.block_text(message)
        assert "See #1000 and #1003 for it." in text, text
