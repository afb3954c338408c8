"""The footer follows the keys that apply in place: a jump that makes `alt+left Back` apply shows
that key without the footer composing itself anew (Textual's Footer did: every key unmounted,
mounted and restyled, 240-335 ms of a 30-40 ms jump in bench/bench_viewer.py), and what it shows
is what a footer composed afresh shows."""

from __future__ import annotations

from pathlib import Path

from store_fixture import fill
from textual.widgets._footer import FooterKey
from viewer_helpers import ready, settle, wait_for

from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.transcript import TranscriptScreen
from ctxview.viewer.widgets.footer import KeysFooter


def shown(footer: KeysFooter) -> list[str]:
    keys = [k for k in footer.query(FooterKey) if k.display and k.region.width]
    keys.sort(key=lambda k: k.region.x)
    return [f"{k.key_display} {k.description}" for k in keys]


async def test_a_jump_shows_back_in_place_and_as_a_fresh_footer_would(tmp_path: Path) -> None:
    filled = await fill(tmp_path)
    app = CtxviewApp(filled.store, session=filled.session_id, watch=False)
    async with app.run_test(size=(200, 40)) as pilot:
        view = await ready(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        footer = screen.query_one(KeysFooter)
        await wait_for(pilot, lambda: shown(footer))
        before = shown(footer)
        assert not any(k.endswith(" Back") for k in before), before
        widgets = set(footer.query(FooterKey))

        assert screen.jump_to(filled.ids["grep"])
        await settle(pilot, view)
        await wait_for(pilot, lambda: any(k.endswith(" Back") for k in shown(footer)))
        after = shown(footer)
        assert set(footer.query(FooterKey)) == widgets, "the footer composed itself anew"

        footer.call_later(footer.recompose)  # what a footer composed now shows
        await wait_for(pilot, lambda: set(footer.query(FooterKey)) != widgets)
        await pilot.pause()
        await wait_for(pilot, lambda: shown(footer) == after)

        widgets = set(footer.query(FooterKey))
        await pilot.press("alt+left")  # back where we were: nothing to go back to
        await wait_for(pilot, lambda: shown(footer) == before)
        assert set(footer.query(FooterKey)) == widgets
        # A hidden key's binding does not run: alt+left again goes nowhere.
        row = view.cursor
        await pilot.press("alt+left")
        await pilot.pause()
        assert view.cursor == row
