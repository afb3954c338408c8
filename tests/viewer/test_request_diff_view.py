"""The viewer over a store the real proxy filled from a scripted Messages API (proxy_fixture):
`x` shows each proxied request exactly as the upstream received it, `d` what changed since the
request before it — kept, broken by an edit inside the prefix (naming the block), broken by
time — with the answers' own usage; and a snapshot of the change view."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from proxy_fixture import USAGE, ProxyFilled, proxy_fill
from textual.pilot import Pilot
from viewer_helpers import open_request, ready, wait_for

from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.help import KEYS, HelpScreen
from ctxview.viewer.screens.request_diff import RequestDiffScreen
from ctxview.viewer.widgets.context_panel import ContextPanel

SIZE = (120, 40)


@pytest.fixture
def filled(tmp_path: Path) -> ProxyFilled:
    return asyncio.run(proxy_fill(tmp_path))


def _app(f: ProxyFilled) -> CtxviewApp:
    return CtxviewApp(f.store, session=f.session_id, theme="ctxview-dark", watch=False)


async def _diff(pilot: Pilot[None]) -> RequestDiffScreen:
    await pilot.press("d")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, RequestDiffScreen))
    screen = pilot.app.screen
    assert isinstance(screen, RequestDiffScreen)
    await wait_for(pilot, lambda: screen.change is not None)
    return screen


async def test_x_shows_each_proxied_request_exactly_as_forwarded(filled: ProxyFilled) -> None:
    async with _app(filled).run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = await open_request(pilot)
        assert len(screen.recorded) == len(filled.received) == 5
        for k in range(5, 0, -1):  # the last request first (no cursor: the newest), then back
            await wait_for(pilot, lambda k=k: screen.request == k)
            title = str(screen.query_one("#context-title").render())
            assert f"Request {k} of 5, exactly as forwarded (ctxview proxy" in title
            sent = json.loads(filled.received[k - 1])
            # Every parameter on screen, not only the model's: temperature and metadata too.
            assert "temperature: 0.2" in screen.text
            assert json.dumps(sent["metadata"], separators=(",", ":")) in screen.text
            u = USAGE[k - 1]
            assert f"cache read {u['cache_read_input_tokens']:,}" in title
            await pilot.press("j")  # the JSON body: what the upstream received, JSON-equal
            assert json.loads(screen.text) == sent
            await pilot.press("j", "left_square_bracket")


async def test_d_says_what_changed_and_why(filled: ProxyFilled) -> None:
    async with _app(filled).run_test(size=SIZE) as pilot:
        await ready(pilot)
        await open_request(pilot)
        diff = await _diff(pilot)
        reasons = []
        for k in range(5, 0, -1):
            await wait_for(pilot, lambda k=k: diff.request == k)
            assert diff.change is not None
            reasons.append(diff.change.reason)
            await pilot.press("left_square_bracket")
        assert reasons == ["kept", "ttl", "edit", "kept", "first"]
        await pilot.press("right_square_bracket", "right_square_bracket")  # request 3: the edit
        await wait_for(pilot, lambda: diff.request == 3)
        reason = str(diff.query_one("#diff-reason").render())
        assert "Message 2 (user) was edited in the prefix, block 0 (tool_result)" in reason
        assert diff.query_one("#diff-reason").has_class("-edit")
        prefix = str(diff.query_one("#diff-prefix").render())
        assert "2 of the previous request's 3 messages" in prefix
        assert "first difference at message 2" in prefix
        # The message as it was and as it is, then what came after the shared prefix.
        assert "notes.txt\nsrc\nREADME.md" in diff.text and "cat notes.txt" in diff.text
        assert "3 messages after the shared prefix (from message 2)" in diff.text
        usage = str(diff.query_one("#diff-usage").render())
        assert "cache read 410" in usage and "cache write 700" in usage
        await pilot.press("right_square_bracket")  # request 4: ten minutes later
        await wait_for(pilot, lambda: diff.request == 4)
        assert "600 s since the previous request, past the cache's 300 s lifetime" in str(
            diff.query_one("#diff-reason").render())  # fmt: skip
        assert "Cached prefix: nothing (5 leading messages shared" in str(
            diff.query_one("#diff-prefix").render())  # fmt: skip
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = [what for _, rows in KEYS for _, what in rows] + [
            w for _, w in help_screen._others()
        ]
        assert any(w.startswith("changes since the previous request") for w in keys)


async def test_the_context_panel_shows_the_real_usage(filled: ProxyFilled) -> None:
    async with _app(filled).run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("c")
        await wait_for(pilot, lambda: pilot.app.screen.query(ContextPanel))
        panel = pilot.app.screen.query_one(ContextPanel)
        await wait_for(pilot, lambda: panel.figures.recorded and panel.figures.done)
        await pilot.pause()
        text = panel._panel_text(120).plain
        last = USAGE[-1]
        assert "recorded" in text
        assert (f"cache read {last['cache_read_input_tokens']:,} · cache write "
                f"{last['cache_creation_input_tokens']:,}") in text  # fmt: skip
        assert "No requests yet" not in text


def test_request_diff_snapshot(snap_compare, filled: ProxyFilled) -> None:  # type: ignore[no-untyped-def]
    async def to_edit(pilot: Pilot[None]) -> None:
        await ready(pilot)
        await open_request(pilot)
        diff = await _diff(pilot)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await wait_for(pilot, lambda: diff.request == 3)
        await pilot.pause()

    assert snap_compare(_app(filled), terminal_size=SIZE, run_before=to_edit)
