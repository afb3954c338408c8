"""A transcript open while its session runs: a call that started a sub-agent arriving live makes
the view look up the session's sub-agents again, so the call leads to the sub-agent's session
(Claude Code's Task, Gemini's invoke_agent)."""

from __future__ import annotations

from pathlib import Path

import pytest
from viewer_helpers import ready, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.transcript import TranscriptScreen


@pytest.mark.parametrize("tool", ["Task", "invoke_agent"])
async def test_a_live_agent_call_links_to_its_sub_agent(tool: str, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    async with await Writer.open(store) as writer:
        top = await Session.start(writer, tmp_path, session_id="gm-top", title="top")
        await top.insert("bash", {"command": "echo top"}, "top's output", call_ref="c0")
        async with CtxviewApp(store, session="gm-top").run_test(size=(100, 30)) as pilot:
            await ready(pilot)
            screen = pilot.app.screen
            assert isinstance(screen, TranscriptScreen)
            await Session.start(writer, tmp_path, session_id="gm-agent", title="agent",
                                parent_session="gm-top", parent_call="c1")  # fmt: skip
            await top.insert(tool, {"prompt": "look"}, "the report", call_ref="c1")
            await wait_for(pilot, lambda: "c1" in screen.view.agents)
            assert screen.view.agents["c1"][0] == "gm-agent"
