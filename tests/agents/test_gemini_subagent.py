"""Gemini CLI 0.61's sub-agents with ctxview's hooks, headless against the scripted Gemini API:
the parent calls `invoke_agent` (the codebase investigator), whose own turns read a file and
end with `complete_task`. Gemini runs a sub-agent's hooks with the parent's session id and
nothing naming the sub-agent, and gives it a tool registry of its own (four read-only tools,
no MCP), where a tail call of ctxview's `show` is "not found": its calls must keep Gemini's own
output, and the parent's calls after it get the rules."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxview.agents.hook_client import stop
from tests.agents.agent_project import Following, wait_for
from tests.agents.fake_gemini import (
    Call,
    Calls,
    Request,
    Say,
    Scripted,
    function_responses,
    response_text,
)
from tests.agents.gemini_helpers import CLI, chat_files, ctxview, env, run_gemini

pytestmark = pytest.mark.skipif(not CLI.exists(), reason="npm ci --prefix tests/agents/gemini")
REPORT = {"report": {"SummaryOfFindings": "two lines", "ExplorationTrace": ["read notes.txt"],
                     "RelevantLocations": []}}  # fmt: skip


def _tools(body: dict[str, object]) -> set[str]:
    tools = body.get("tools")
    assert isinstance(tools, list)
    return {d["name"] for t in tools for d in t.get("functionDeclarations", [])}


def _project(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A project holding notes.txt, Gemini's environment for it and the store."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("alpha\nbeta\n")
    environ = env(tmp_path, "")
    return proj, environ, Path(environ["CTXVIEW_STORE"])


def _run(proj: Path, environ: dict[str, str], steps: list[Call | Calls | Say], prompt: str,
         agents: dict[str, list[Call | Say]] | None = None,
         hold: Callable[[Request], None] | None = None) -> tuple[Scripted, Path, str]:  # fmt: skip
    """Gemini run headless on the scripted steps (the engine stopped after, whatever the run
    did): the server, the parent's chat file and its session id."""
    try:
        with Scripted(steps, agents=agents or {}, hold=hold) as s:
            environ["GOOGLE_GEMINI_BASE_URL"] = s.base_url
            done = run_gemini(proj, environ, prompt)
        assert done.returncode == 0, done.stderr
    finally:
        stop(Path(environ["CTXVIEW_STORE"]))
    [parent_file] = chat_files(Path(environ["HOME"]))
    return s, parent_file, json.loads(parent_file.read_text().splitlines()[0])["sessionId"]


def test_a_sub_agents_calls_keep_gemini_output_and_the_parent_keeps_the_rules(
    tmp_path: Path,
) -> None:
    proj, environ, store = _project(tmp_path)
    f = str(proj / "notes.txt")
    assert ctxview(proj, environ, "install", "gemini").returncode == 0
    steps: list[Call | Say] = [
        Call("read_file", {"file_path": f}),  # the parent
        Call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": "read notes"}),
        Call("read_file", {"file_path": f}), Call("read_file", {"file_path": f}),  # the sub-agent
        Call("complete_task", REPORT),
        Call("read_file", {"file_path": f}), Say("fin."),  # the parent again
    ]  # fmt: skip
    s, parent_file, _ = _run(proj, environ, steps, "investigate notes.txt")
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
    # ... linked to the parent's invoke_agent call as the hooks stored it (the engine found the
    # sub-agent in the call's result: Gemini's record of the tail call no longer names it).
    assert _link(store, f"gm-{sub_file.stem}") == _agent_call(store, sessions[0])


def _link(store: Path, sid: str) -> str | None:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT parent_call FROM sessions WHERE id = ?", (sid,)).fetchone()[0]


def _agent_call(store: Path, sid: str) -> str:
    """The call_ref of the session's one invoke_agent result."""
    with sqlite3.connect(store) as db:
        [(ref,)] = db.execute(
            "SELECT call_ref FROM events WHERE session = ? AND kind = 'result' AND "
            "tool = 'invoke_agent'", (sid,)).fetchall()  # fmt: skip
    return str(ref)


def test_an_imported_sub_agent_is_linked_to_the_call_that_ran_it(tmp_path: Path) -> None:
    """Without ctxview's hooks: `ctxview import ~/.gemini/tmp` takes the parent's chat file and
    the sub-agent's (`chats/<parent's id>/<agent's id>.jsonl`), and the sub-agent's session is
    linked to the parent's `invoke_agent` call, whose record in the chat file names the agent."""
    proj, environ, store = _project(tmp_path)
    f = str(proj / "notes.txt")
    steps: list[Call | Say] = [
        Call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": "read notes"}),
        Call("read_file", {"file_path": f}), Call("complete_task", REPORT),  # the sub-agent
        Say("fin."),
    ]  # fmt: skip
    _, parent_file, sid = _run(proj, environ, steps, "investigate notes.txt")
    home = Path(environ["HOME"])
    [sub_file] = (parent_file.parent / sid).glob("*.jsonl")
    calls = [c for line in parent_file.read_text().splitlines()
             for c in json.loads(line).get("toolCalls") or [] if c.get("name") == "invoke_agent"]  # fmt: skip
    assert {c["id"] for c in calls} and all(c.get("agentId") == sub_file.stem for c in calls), calls
    imported = ctxview(proj, environ, "import", str(home / ".gemini" / "tmp"))
    assert imported.returncode == 0, imported.stderr
    assert _link(store, f"gm-{sub_file.stem}") == calls[0]["id"] == _agent_call(store, f"gm-{sid}")
    # Gemini records each call's response as a user message of function responses: they are
    # the results, not a message; the sub-agent is titled by its objective, past the context
    # Gemini puts before it.
    with sqlite3.connect(store) as db:
        titles = dict(db.execute("SELECT id, title FROM sessions").fetchall())
        said = [r[0] for r in db.execute("SELECT text FROM events WHERE kind = 'message' AND "
                                         "role = 'user' ORDER BY session, seq")]  # fmt: skip
    assert titles == {f"gm-{sid}": "investigate notes.txt", f"gm-{sub_file.stem}": "read notes"}
    assert "investigate notes.txt" in said and not any("[functionResponse]" in t for t in said)


@pytest.mark.parametrize("hooked", [True, False], ids=["hooked", "imported"])
def test_two_sub_agents_at_once_are_each_linked_to_their_own_call(hooked: bool,
                                                                  tmp_path: Path) -> None:  # fmt: skip
    """One turn invokes two investigators, which Gemini runs at once: each one's session is
    linked to its own invoke_agent call (the one whose result holds its report), with ctxview's
    hooks (the engine links them) and without (the import does)."""
    proj, environ, store = _project(tmp_path)
    f = str(proj / "notes.txt")
    if hooked:
        assert ctxview(proj, environ, "install", "gemini").returncode == 0
    prompts = ("look-at-notes-AAA", "look-at-notes-BBB")
    reports = {p: {"report": {"SummaryOfFindings": f"found by {p}", "ExplorationTrace": [],
                              "RelevantLocations": []}} for p in prompts}  # fmt: skip
    steps: list[Call | Calls | Say] = [
        Calls([Call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": p})
               for p in prompts]),
        Say("fin."),
    ]  # fmt: skip
    agents: dict[str, list[Call | Say]] = {
        prompts[0]: [Call("read_file", {"file_path": f}), Call("complete_task", reports[prompts[0]])],
        prompts[1]: [Call("complete_task", reports[prompts[1]])],
    }  # fmt: skip
    _, parent_file, sid = _run(proj, environ, steps, "investigate notes.txt twice", agents)
    home = Path(environ["HOME"])
    subs = sorted((parent_file.parent / sid).glob("*.jsonl"))
    assert len(subs) == 2, subs
    imported = ctxview(proj, environ, "import", str(home / ".gemini" / "tmp"))
    assert imported.returncode == 0, imported.stderr
    with sqlite3.connect(store) as db:
        calls = db.execute(
            "SELECT e.call_ref, b.shown FROM events e JOIN bodies b ON b.session = e.session AND "
            "b.rid = e.rid WHERE e.session = ? AND e.kind = 'result' AND e.tool = 'invoke_agent'",
            (f"gm-{sid}",)).fetchall()  # fmt: skip
    assert len(calls) == 2 and len({ref for ref, _ in calls}) == 2, calls
    for sub in subs:
        prompt = next(p for p in prompts if p in sub.read_text())
        [ref] = [ref for ref, text in calls if f"found by {prompt}" in (text or "")]
        assert _link(store, f"gm-{sub.stem}") == ref, (prompt, calls)


def test_a_sub_agent_whose_calls_have_the_models_ids_is_linked_too(tmp_path: Path) -> None:
    """A model that gives its calls ids: the sub-agent's call ids no longer name it, so the
    engine finds the sub-agent's chat file that holds them."""
    proj, environ, store = _project(tmp_path)
    assert ctxview(proj, environ, "install", "gemini").returncode == 0
    steps: list[Call | Calls | Say] = [
        Call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": "sub-ids"}),
        Say("fin."),
    ]  # fmt: skip
    agents: dict[str, list[Call | Say]] = {"sub-ids": [Call("complete_task", REPORT, id="m-9")]}
    _, parent_file, sid = _run(proj, environ, steps, "investigate", agents)
    home = Path(environ["HOME"])
    [sub_file] = (parent_file.parent / sid).glob("*.jsonl")
    assert 'm-9"' in sub_file.read_text() and f"{sub_file.stem}#" not in sub_file.read_text()
    imported = ctxview(proj, environ, "import", str(home / ".gemini" / "tmp"))
    assert imported.returncode == 0, imported.stderr
    assert _link(store, f"gm-{sub_file.stem}") == _agent_call(store, f"gm-{sid}")


def _sessions(store: Path) -> dict[str, str | None]:
    with sqlite3.connect(store) as db:
        return dict(db.execute("SELECT id, parent_call FROM sessions").fetchall())


def test_a_sub_agent_followed_while_it_runs_is_linked_when_its_call_ends(tmp_path: Path) -> None:
    """Hooked, and `ctxview follow` of the parent's chat file started as the sub-agent's first
    turn is asked: the follow takes the sub-agent's file while it runs (before its
    `invoke_agent` call has ended, so nothing names it yet), and it is linked to that call as
    the hooks stored it once the call ends; the parent's call is stored once."""
    proj, environ, store = _project(tmp_path)
    f = str(proj / "notes.txt")
    assert ctxview(proj, environ, "install", "gemini").returncode == 0
    steps: list[Call | Calls | Say] = [
        Call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": "read notes"}),
        Call("read_file", {"file_path": f}), Call("complete_task", REPORT),  # the sub-agent
        Say("fin."),
    ]  # fmt: skip
    follows: list[Following] = []
    early: list[dict[str, str | None]] = []  # the sessions stored as the sub-agent ran

    def follow_the_parent(body: Request) -> None:
        if follows or "complete_task" not in _tools(body):
            return
        [parent] = chat_files(Path(environ["HOME"]))
        follows.append(Following(parent, proj, environ))
        with contextlib.suppress(AssertionError):  # (in the server's thread: told below)
            wait_for(store, lambda: len(_sessions(store)) == 2, "the sub-agent while it runs")
        early.append(_sessions(store))

    try:
        _, _, sid = _run(proj, environ, steps, "investigate notes.txt", hold=follow_the_parent)
        assert follows, "the sub-agent was never asked"
        assert len(early[0]) == 2 and not any(early[0].values()), early  # taken, not yet linked
        parent = f"gm-{sid}"
        wait_for(store, lambda: any(_sessions(store).values()), "the sub-agent's link")
    finally:
        for following in follows:
            following.stop()
    [agent] = [a for a in _sessions(store) if a != parent]
    assert _sessions(store) == {parent: None, agent: _agent_call(store, parent)}
    with sqlite3.connect(store) as db:
        counts = dict(db.execute("SELECT session, count(*) FROM events WHERE kind = 'result' "
                                 "GROUP BY session").fetchall())  # fmt: skip
    assert counts == {parent: 1, agent: 2}, counts  # the sub-agent's read and complete_task
