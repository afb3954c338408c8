"""The result view's `m`: the stored text or what the model was shown, named in the header, the
status and the footer; the search survives the switch."""

from __future__ import annotations

from pathlib import Path

from store_fixture import fill
from viewer_helpers import ready, wait_for

from ctxview.store import Reader
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.messages import OpenResult
from ctxview.viewer.screens.result import ResultScreen

SIZE = (110, 40)


def _text(screen: ResultScreen) -> str:
    return "\n".join(screen.view.render_line(y).text for y in range(screen.view.size.height))


async def test_m_switches_between_the_stored_text_and_the_models_view(tmp_path: Path) -> None:
    f = await fill(tmp_path)
    rid = f.ids["capped"]
    async with await Reader.open(f.store) as reader:
        body = await reader.body(f.session_id, rid)
    assert body is not None
    shown_lines = body.shown.count("\n")  # the bracket goes to the header
    stored_lines = len(body.stored.split("\n"))
    assert shown_lines < stored_lines  # the premise: the model saw less than was stored
    async with CtxviewApp(f.store, session=f.session_id).run_test(size=SIZE) as pilot:
        await ready(pilot)
        pilot.app.post_message(OpenResult(f.session_id, rid))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ResultScreen))
        screen: ResultScreen = pilot.app.screen  # type: ignore[assignment]
        await wait_for(pilot, lambda: getattr(screen, "view", None) is not None)
        await pilot.pause()
        shown = [a.binding for a in screen.active_bindings.values() if a.binding.show]
        assert ("m", "Model/stored") in [(b.key, b.description) for b in shown]
        header = str(screen.query_one("#result-header").render())
        assert "showing the stored text  (m: the model's view)" in header
        assert len(screen.view.lines) == stored_lines
        assert "lines elided" not in "\n".join(screen.view.lines)
        await pilot.press("slash", *"test_3", "enter")
        await pilot.pause()
        stored_matches = len(screen.view.matches)

        await pilot.press("m")
        await wait_for(pilot, lambda: not screen.stored_mode and screen.view.is_mounted)
        await pilot.pause()
        header = str(screen.query_one("#result-header").render())
        assert "showing the model's view (what it was shown)  (m: the stored text)" in header
        assert "the model's view" in str(screen.query_one("#result-status").render())
        assert len(screen.view.lines) == shown_lines
        elision = next(line for line in screen.view.lines if "lines elided" in line)
        assert f"#{rid:04x}" in elision
        # The search is kept, over the model's view: fewer lines hold it.
        assert screen.view.needle == "test_3"
        assert 0 < len(screen.view.matches) < stored_matches
        assert "test_3" in _text(screen)

        await pilot.press("m")
        await wait_for(pilot, lambda: screen.stored_mode and screen.view.is_mounted)
        await pilot.pause()
        assert len(screen.view.lines) == stored_lines
        assert len(screen.query("#result-view")) == 1
        assert "showing the stored text" in str(screen.query_one("#result-header").render())
