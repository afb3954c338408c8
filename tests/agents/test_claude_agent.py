"""A sub-agent under the hook (Claude Code 2.1.328 runs Agent asynchronously): its tools are
shaped in its own session `cc-<agent_id>`, linked to the Agent call of its parent, and the
Agent call's own output (metadata, a shape the hook cannot rewrite) gets its id beside it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from claude_helpers import after_result, needs_claude, project, tool_results
from fake_anthropic import FakeAnthropic

pytestmark = [needs_claude, pytest.mark.e2e]


def test_a_sub_agents_results_land_in_its_own_linked_session(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        (p.root / "a.txt").write_text("one\ntwo\n")
        assert p.ctxview("install", "claude-code").returncode == 0
        prompt = "sub-agent: read a.txt"
        steps = [
            {"tool": "Agent", "input": {"description": "look at a", "prompt": prompt,
                                        "subagent_type": "general-purpose"}},
            {"text": "Done."},
        ]
        sub_agent = [  # its own conversation, run beside the main one
            {"tool": "Read", "input": {"file_path": str(p.root / "a.txt")}},
            {"text": "a.txt says one, two."},
        ]
        with FakeAnthropic(steps, threads={prompt: sub_agent}) as api:
            result = p.claude(api.url, "use an agent")
            requests = api.main_requests
        sid = result["session_id"]
        # The sub-agent's read and the Agent call's output share one id counter (the call's
        # hook, as Claude Code launches the agent, comes first).
        sub = next(r for r in requests if "toolu_0002_Read" in tool_results(r))
        assert tool_results(sub)["toolu_0002_Read"].startswith(
            f"0\t[#1001 {p.root / 'a.txt'} lines 1-2 of 2 sha ")  # fmt: skip
        main = next(r for r in requests if "toolu_0001_Agent" in tool_results(r))
        beside = "\n".join(after_result(main, "toolu_0001_Agent"))
        assert "PostToolUse:Agent hook additional context: [#1000] is the id of this Agent " \
            "result." in beside  # fmt: skip
        conn = sqlite3.connect(p.store)
        rows = dict(conn.execute("SELECT id, parent_session FROM sessions").fetchall())
        agent = next(k for k in rows if k != f"cc-{sid}")
        assert rows == {f"cc-{sid}": None, agent: f"cc-{sid}"}
        (call,) = conn.execute("SELECT parent_call FROM sessions WHERE id = ?", (agent,)).fetchone()
        assert call == "toolu_0001_Agent"
        assert conn.execute("SELECT tool, rid FROM events WHERE session = ? AND kind = 'result'",
                            (agent,)).fetchall() == [("read", 0x1001)]  # fmt: skip
