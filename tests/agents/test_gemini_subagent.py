"""Gemini CLI 0.61's sub-agents with ctxview's hooks, headless against the scripted Gemini API:
the parent calls `invoke_agent` (the codebase investigator), whose own turns read a file and
end with `complete_task`. Gemini runs a sub-agent's hooks with the parent's session id and
nothing naming the sub-agent, and gives it a tool registry of its own (four read-only tools,
no MCP), where a tail call of ctxview's `show` is "not found": its calls must keep Gemini's own
output, and the parent's calls after it get the rules."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from ctxview.agents.hook_client import stop
from tests.agents.fake_gemini import Call, Say, Scripted, function_responses, response_text
from tests.agents.gemini_helpers import CLI, chat_files, ctxview, env, run_gemini

pytestmark = pytest.mark.skipif(not CLI.exists(), reason="npm ci --prefix tests/agents/gemini")
REPORT = {"report": {"SummaryOfFindings": "two lines", "ExplorationTrace": ["read notes.txt"],
                     "RelevantLocations": []}}  # fmt: skip


def _tools(body: dict[str, object]) -> set[str]:
    tools = body.get("tools")
    assert isinstance(tools, list)
    return {d["name"] for t in tools for d in t.get("functionDeclarations", [])}


def test_a_sub_agents_calls_keep_gemini_output_and_the_parent_keeps_the_rules(
    tmp_path: Path,
) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("alpha\nbeta\n")
    f = str(proj / "notes.txt")
    environ = env(tmp_path, "")
    store = Path(environ["CTXVIEW_STORE"])
    assert ctxview(proj, environ, "install", "gemini").returncode == 0
    steps: list[Call | Say] = [
        Call("read_file", {"file_path": f}),  # the parent
        Call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": "read notes"}),
        Call("read_file", {"file_path": f}), Call("read_file", {"file_path": f}),  # the sub-agent
        Call("complete_task", REPORT),
        Call("read_file", {"file_path": f}), Say("fin."),  # the parent again
    ]  # fmt: skip
    try:
        with Scripted(steps) as s:
            environ["GOOGLE_GEMINI_BASE_URL"] = s.base_url
            done = run_gemini(proj, environ, "investigate notes.txt")
        assert done.returncode == 0, done.stderr
    finally:
        stop(store)
    turns = s.turns()
    sub = [t for t in turns if "complete_task" in _tools(t)]
    parent = [t for t in turns if "invoke_agent" in _tools(t)]
    assert len(sub) == 3 and len(parent) == 4, [sorted(_tools(t)) for t in turns]
    # The sub-agent's reads: Gemini's own text (no "Tool "mcp_ctxview_show" not found").
    got = [(fr["name"], response_text(fr)) for fr in function_responses(sub[-1])]
    assert got == [("read_file", "alpha\nbeta\n")] * 2, got
    # Its complete_task went through: the parent got the report, through the rules.
    answers = [(fr["name"], response_text(fr)) for fr in function_responses(parent[-1])]
    assert [n for n, _ in answers] == ["read_file", "invoke_agent", "read_file"], answers
    report = answers[1][1]
    assert "Termination Reason: GOAL" in report and "two lines" in report, report
    assert re.search(r"^\[#1001\]$", report, re.M), report
    first = re.search(r"\[#1000 \S*notes\.txt lines 1-2 of 2 sha \w+\]\n1: alpha\n", answers[0][1])
    assert first, answers[0][1]
    # The parent's re-read after the sub-agent: its unchanged stub (the sub-agent's reads are
    # no part of the parent's context, and none of them was stored).
    assert re.search(r"\[#1002 [^\]]*\] Unchanged since #1000", answers[2][1]), answers[2][1]
    with sqlite3.connect(store) as db:
        sessions = [r[0] for r in db.execute("SELECT id FROM sessions")]
        tools = [r[0] for r in db.execute(
            "SELECT json_extract(e2.data, '$.tool') FROM events e2 WHERE e2.kind = 'result' "
            "ORDER BY e2.seq")]  # fmt: skip
        results = db.execute("SELECT count(*) FROM events WHERE kind = 'result'").fetchone()[0]
    assert len(sessions) == 1 and sessions[0].startswith("gm-"), sessions
    assert results == 3, (results, tools, json.dumps(answers)[:500])
    # Gemini's own record of the sub-agent: a chat file of its own, in a folder named after the
    # parent's session. Imported with the rest, it is the parent's sub-agent; the parent's
    # calls the hooks stored are not stored again.
    home = Path(environ["HOME"])
    [parent_file] = chat_files(home)
    [sub_file] = (parent_file.parent / sessions[0].removeprefix("gm-")).glob("*.jsonl")
    imported = ctxview(proj, environ, "import", str(home / ".gemini" / "tmp"))
    assert imported.returncode == 0, imported.stderr
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT id, parent_session FROM sessions ORDER BY parent_session IS NOT "
                          "NULL").fetchall()  # fmt: skip
        counts = dict(db.execute("SELECT session, count(*) FROM events WHERE kind = 'result' "
                                 "GROUP BY session").fetchall())  # fmt: skip
    assert rows == [(sessions[0], None), (f"gm-{sub_file.stem}", sessions[0])], rows
    assert counts == {sessions[0]: 3, f"gm-{sub_file.stem}": 3}, counts  # 2 reads, complete_task
