"""A sub-agent's session ends when it hands back, or with its parent at the latest, with the
real Claude Code (2.1.328): a background agent (the default) at its SubagentStop hook, one run
in the foreground when its Agent call's result comes, either at the parent's SessionEnd when no
hook told; `ctxview doctor` counts no sub-agent as a live session."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from claude_helpers import Project, needs_claude, project
from fake_anthropic import FakeAnthropic

from ctxview.agents import hook_trace

pytestmark = [needs_claude, pytest.mark.e2e]

PROMPT = "sub-agent: list the files"


def _run(p: Project, *, background: bool, subagent_stop: bool) -> tuple[float, float | None]:
    """The parent's and the sub-agent's end times after one session with one sub-agent."""
    assert p.ctxview("install", "claude-code").returncode == 0
    settings = p.root / ".claude" / "settings.local.json"
    if not subagent_stop:  # as installed by a ctxview from before the hook
        data = json.loads(settings.read_text())
        del data["hooks"]["SubagentStop"]
        settings.write_text(json.dumps(data, indent=2))
    steps = [
        {"tool": "Agent", "input": {"description": "list", "prompt": PROMPT,
                                    "subagent_type": "general-purpose",
                                    "run_in_background": background}},
        {"tool": "Bash", "input": {"command": "echo parent goes on", "description": "p"}},
        {"text": "Done."},
    ]  # fmt: skip
    sub_agent = [{"tool": "Bash", "input": {"command": "ls", "description": "ls"}},
                 {"text": "One file."}]  # fmt: skip
    with FakeAnthropic(steps, threads={PROMPT: sub_agent}) as api:
        sid = f"cc-{p.claude(api.url, 'use an agent')['session_id']}"
    conn = sqlite3.connect(p.store)
    try:
        rows = dict(conn.execute("SELECT id, ended FROM sessions").fetchall())
        (agent,) = [r[0] for r in conn.execute(
            "SELECT id FROM sessions WHERE parent_session = ?", (sid,))]  # fmt: skip
        kinds = [r[0] for r in conn.execute(
            "SELECT kind FROM events WHERE session = ? ORDER BY seq", (agent,))]  # fmt: skip
    finally:
        conn.close()
    assert kinds.count("end") == (1 if rows[agent] is not None else 0), kinds
    doctor = p.ctxview("doctor")
    assert "opens; 0 live Claude Code session(s)" in doctor.stdout, doctor.stdout
    return rows[sid], rows[agent]


def _traced(store: Path, event: str) -> list[dict[str, object]]:
    """The engine's traces of `event`, once its idle loop has saved them (every 0.2 s)."""
    deadline = time.monotonic() + 10
    while not (found := [t for t in hook_trace.read(store) if t.get("event") == event]):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return found


def test_a_background_sub_agent_ends_at_its_subagent_stop(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        parent, agent = _run(p, background=True, subagent_stop=True)
        # Installed as an http hook: Claude Code 2.1.328 POSTs SubagentStop to the engine (as
        # it does every event but SessionStart), so it costs no process start either.
        settings = json.loads((p.root / ".claude" / "settings.local.json").read_text())
        (entry,) = [h for g in settings["hooks"]["SubagentStop"] for h in g["hooks"]]
        assert entry["type"] == "http", entry
        stops = _traced(p.store, "SubagentStop")
        assert stops and all(t["transport"] == "http" and not t.get("error") for t in stops)
    assert agent is not None and agent < parent  # before the parent's SessionEnd


def test_a_foreground_sub_agent_ends_as_its_result_comes(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        parent, agent = _run(p, background=False, subagent_stop=False)
    assert agent is not None and agent < parent  # at the Agent call's PostToolUse


def test_a_sub_agent_no_hook_ended_ends_with_its_parent(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        parent, agent = _run(p, background=True, subagent_stop=False)
    assert agent is not None and agent >= parent
