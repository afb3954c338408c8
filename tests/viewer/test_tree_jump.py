"""A jump to an id of another session of the tree (a sub-agent shares its parent's id space):
from the parent's transcript, the sub-agent's id opens the sub-agent's transcript at it, and
from there the parent's id goes back to the parent's."""

from __future__ import annotations

from pathlib import Path

from viewer_helpers import ready, wait_for

from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.transcript import TranscriptScreen

SIZE = (100, 30)


async def _tree(tmp: Path) -> Path:
    store = tmp / "s.db"
    async with await Writer.open(store) as writer:
        top = await Session.start(writer, tmp, session_id="cc-top", title="top")
        await top.insert("bash", {"command": "echo top"}, "top's output", call_ref="t1")
        agent = await Session.start(writer, tmp, session_id="cc-agent", title="agent",
                                    parent_session="cc-top", parent_call="t1")  # fmt: skip
        await agent.insert("bash", {"command": "echo agent"}, "agent's output")
        await top.insert("bash", {"command": "echo again"}, "top again")
    return store


def _on(pilot, session: str, rid: int) -> bool:  # type: ignore[no-untyped-def]
    screen = pilot.app.screen
    if not isinstance(screen, TranscriptScreen) or screen.session_id != session:
        return False
    view = getattr(screen, "view", None)
    block = view.cursor_block if view is not None else None
    return block is not None and block.rid == rid


async def test_a_jump_to_a_sub_agents_id_opens_the_sub_agent_there(tmp_path: Path) -> None:
    store = await _tree(tmp_path)
    async with CtxviewApp(store, session="cc-top").run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("g", *"1001", "enter")
        await wait_for(pilot, lambda: _on(pilot, "cc-agent", 0x1001))
        await ready(pilot)
        await pilot.press("g", *"#1002", "enter")
        await wait_for(pilot, lambda: _on(pilot, "cc-top", 0x1002))
        await pilot.press("g", *"beef", "enter")
        await wait_for(pilot, lambda: "There is no result #beef in this session." in str(
            pilot.app.screen.query_one("#status").render()))  # fmt: skip
