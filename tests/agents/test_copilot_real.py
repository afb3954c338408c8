"""The real GitHub Copilot CLI 1.0.102 (tests/agents/copilot, `npm ci` there) run headless
(`-p`, `--allow-all-tools`) against the scripted Chat Completions (fake_openai.py) as its BYOK
provider, offline (`COPILOT_OFFLINE`, `COPILOT_PROVIDER_BASE_URL`: no GitHub sign-in, nothing
leaves 127.0.0.1), in a temporary HOME: the `~/.copilot/session-state/<id>/events.jsonl` it
writes is what `ctxview import` reads (issue 19 point 3), so this fixture is Copilot's own.

The scripted model views a file twice and a range of it, runs a long command, searches twice,
edits, creates a file and lists by glob; the store must hold one session whose every result is
the text the model was given (as `seen`), through the rules: an id for each, unchanged stubs for
the second view and the range, a cap on the command, a same-result stub for the second search.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from agent_project import CTXVIEW, HERE, needs
from fake_openai import Call, Say, Scripted, chat_tool_outputs

COPILOT = HERE / "copilot" / "node_modules" / ".bin" / "copilot"

needs_copilot = needs(COPILOT, "Copilot CLI", "copilot")
pytestmark = [needs_copilot, pytest.mark.e2e]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copilot unpacks its 235 MB package into the cache folder at its first start: one per
    module, not the user's."""
    return tmp_path_factory.mktemp("copilot-cache")


def env(home: Path, cache: Path, store: Path, api: Scripted | None = None) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI", "COPILOT", "GH_", "GITHUB", "CTXVIEW", "XDG_"))}  # fmt: skip
    out.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"),
               XDG_CACHE_HOME=str(cache), CTXVIEW_STORE=str(store), COPILOT_AUTO_UPDATE="false")  # fmt: skip
    if api is not None:
        out.update(COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL=api.base_url,
                   COPILOT_PROVIDER_TYPE="openai", COPILOT_PROVIDER_API_KEY="test-key",
                   COPILOT_MODEL="gpt-4.1")  # fmt: skip
    return out


def copilot(home: Path, repo: Path, cache: Path, store: Path, steps: list[Call | Say],
            prompt: str, *more: str, ids: str = "call_", aside: Any = None,
            limit: int | None = None) -> tuple[str, dict[str, str], list[dict[str, Any]]]:  # fmt: skip
    """One headless Copilot run on `steps`: its output, what its model was given per call (by
    id: `<ids><n>`) and the requests. `limit`: the model's prompt tokens (Copilot compacts
    near it)."""
    run_env = {}
    with Scripted(steps, call_ids=ids, aside=aside) as api:
        run_env = env(home, cache, store, api)
        if limit is not None:
            run_env["COPILOT_PROVIDER_MAX_PROMPT_TOKENS"] = str(limit)
        p = subprocess.run([str(COPILOT), "-p", prompt, "--allow-all-tools", "--no-auto-update",
                            "--disable-client-telemetry", *more],
                           cwd=repo, env=run_env, capture_output=True, text=True, timeout=300,
                           stdin=subprocess.DEVNULL)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    assert api.spent
    given: dict[str, str] = {}
    for request in api.requests:
        given |= chat_tool_outputs(request)
    return p.stdout, given, api.requests


def test_a_copilot_session_imports_with_what_its_model_was_given(tmp_path: Path,
                                                                 cache: Path) -> None:  # fmt: skip
    home, repo, store = tmp_path / "home", tmp_path / "repo", tmp_path / "store.db"
    home.mkdir()
    repo.mkdir()
    notes = repo / "notes.py"
    notes.write_text("".join(f"line_{i} = {i}\n" for i in range(1, 61)))
    grep = {"pattern": "line_4", "output_mode": "content"}
    steps: list[Call | Say] = [
        Call("view", {"path": str(notes)}),
        Call("view", {"path": str(notes)}),
        Call("view", {"path": str(notes), "view_range": [10, 12]}),
        Call("bash", {"command": "seq 1 3000", "description": "count to 3000"}),
        Call("grep", grep),
        Call("grep", grep),
        Call("edit", {"path": str(notes), "old_str": "line_2 = 2\n", "new_str": "line_2 = 22\n"}),
        Call("create", {"path": str(repo / "new.txt"), "file_text": "fresh\n"}),
        Call("glob", {"pattern": "*.py"}),
        Say("All done."),
    ]
    out, given, _ = copilot(home, repo, cache, store, steps, "Tidy notes.py")
    assert "All done." in out
    assert "line_2 = 22\n" in notes.read_text() and (repo / "new.txt").read_text() == "fresh\n"
    assert sorted(given) == [f"call_{n}" for n in range(1, 10)]

    [events] = (home / ".copilot" / "session-state").glob("*/events.jsonl")
    imp = subprocess.run([str(CTXVIEW), "import", str(home / ".copilot" / "session-state")],
                         cwd=repo, env=env(home, cache, store), capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert imp.returncode == 0, imp.stderr
    conn = sqlite3.connect(store)
    try:
        [(sid, source, workspace)] = conn.execute("SELECT id, source, workspace FROM sessions")
        got = conn.execute(
            "SELECT e.call_ref, e.tool, e.rkind, e.capped, e.line_from, e.line_to, e.seen_chars, "
            "b.stored FROM events e JOIN bodies b ON b.session = e.session AND b.rid = e.rid "
            "WHERE e.kind = 'result' ORDER BY e.seq").fetchall()  # fmt: skip
        said = conn.execute("SELECT role, text FROM events WHERE kind = 'message' AND text != '' "
                            "ORDER BY seq").fetchall()  # fmt: skip
        usage = [json.loads(d or "{}").get("usage") for (d,) in conn.execute(
            "SELECT data FROM events WHERE role = 'assistant' ORDER BY seq")]  # fmt: skip
    finally:
        conn.close()
    assert sid == f"cp-{events.parent.name}" and source == "copilot-cli"
    assert workspace == str(repo)
    assert said == [("user", "Tidy notes.py"), ("assistant", "All done.")]
    # Each request's usage as the scripted provider reported it (1000 + 10n prompt tokens of which
    # 400 cached, 5 + n out), from Copilot's usage records, cache reads out of the input.
    assert usage == [{"input_tokens": 600 + 10 * n, "output_tokens": 5 + n,
                      "cache_read_tokens": 400, "cache_write_tokens": 0} for n in range(1, 11)]  # fmt: skip
    assert [(ref, tool, rule, bool(capped)) for ref, tool, rule, capped, *_ in got] == [
        ("call_1", "read", "full", False), ("call_2", "read", "unchanged", False),
        ("call_3", "read", "unchanged", False), ("call_4", "bash", "full", True),
        ("call_5", "grep", "full", False), ("call_6", "grep", "same", False),
        ("call_7", "edit", "full", False), ("call_8", "write", "created", False),
        ("call_9", "glob", "full", False),
    ]  # fmt: skip
    assert got[2][4:6] == (10, 12)  # the range read, as lines 10-12
    for ref, tool, rule, _, _, _, seen, stored in got:
        assert seen == len(given[ref]), ref  # what the agent really gave its model
        if rule == "full" and tool == "read":  # its lines, numbered by the rules
            assert [re.sub(r"^\d+: ", "", x) for x in stored.splitlines()] == \
                given[ref].splitlines(), ref  # fmt: skip
        elif rule == "full":
            assert stored == given[ref], ref  # kept in full, as given
    # Copilot's own numbers: the command's output is what it ran.
    assert given["call_4"].split("\n")[:3] == ["1", "2", "3"]
    assert json.loads(events.read_text().splitlines()[0])["data"]["copilotVersion"] == "1.0.102"


def imported(home: Path, repo: Path, cache: Path, store: Path) -> Path:
    """The session's own file (Copilot wrote one), imported by `ctxview import`: its path."""
    [events] = (home / ".copilot" / "session-state").glob("*/events.jsonl")
    imp = subprocess.run([str(CTXVIEW), "import", str(events)], cwd=repo,
                         env=env(home, cache, store), capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert imp.returncode == 0, imp.stderr
    return events


def results(store: Path) -> list[tuple[str, str, str, int]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute("SELECT session, tool, rkind, seen_chars FROM events "
                            "WHERE kind = 'result' ORDER BY seq").fetchall()  # fmt: skip
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        conn.close()


def test_follow_takes_a_resumed_run_appended_to_the_session(tmp_path: Path, cache: Path) -> None:
    """`copilot --resume` appends to the session's events.jsonl: `ctxview follow` running beside
    it imports the second run into the same session, the rules going on across it (the file,
    viewed before, is an unchanged stub)."""
    home, repo, store = tmp_path / "home", tmp_path / "repo", tmp_path / "store.db"
    home.mkdir()
    repo.mkdir()
    notes = repo / "notes.py"
    notes.write_text("".join(f"line_{i} = {i}\n" for i in range(1, 31)))
    copilot(home, repo, cache, store, [Call("view", {"path": str(notes)}), Say("Read it.")],
            "Read notes.py")  # fmt: skip
    [events] = (home / ".copilot" / "session-state").glob("*/events.jsonl")
    follow = subprocess.Popen([str(CTXVIEW), "follow", "--no-view", str(events)], cwd=repo,
                              env=env(home, cache, store), stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(results(store)) < 1:
            assert follow.poll() is None and time.monotonic() < deadline, "no first run"
            time.sleep(0.1)
        _, given, _ = copilot(home, repo, cache, store, [
            Call("view", {"path": str(notes)}),
            Call("bash", {"command": "seq 1 2000", "description": "count"}),
            Say("Again."),
        ], "Look again", f"--resume={events.parent.name}", ids="again_")  # fmt: skip
        deadline = time.monotonic() + 60
        while len(results(store)) < 3:
            assert follow.poll() is None and time.monotonic() < deadline, results(store)
            time.sleep(0.1)
    finally:
        follow.send_signal(signal.SIGINT)
        _, err = follow.communicate(timeout=30)
    assert follow.returncode == 0, err
    sid = f"cp-{events.parent.name}"
    got = results(store)
    assert [(s, t, r) for s, t, r, _ in got] == [
        (sid, "read", "full"), (sid, "read", "unchanged"), (sid, "bash", "full")]  # fmt: skip
    assert [n for *_, n in got[1:]] == [len(given["again_1"]), len(given["again_2"])]
    conn = sqlite3.connect(store)
    try:
        users = [t for (t,) in conn.execute("SELECT text FROM events WHERE role = 'user' "
                                            "ORDER BY seq")]  # fmt: skip
    finally:
        conn.close()
    assert users == ["Read notes.py", "Look again"]


def test_a_sub_agent_is_one_child_session_linked_to_its_task_call(tmp_path: Path,
                                                                  cache: Path) -> None:  # fmt: skip
    """Copilot 1.0.102 gives a `task` sub-agent an id of its own (its events' `agentId`), paired
    with the task call only by `subagent.started`: its calls go to the child session of that
    call, and there is no second, unlinked one."""
    home, repo, store = tmp_path / "home", tmp_path / "repo", tmp_path / "store.db"
    home.mkdir()
    repo.mkdir()
    notes = repo / "notes.py"
    notes.write_text("".join(f"line_{i} = {i}\n" for i in range(1, 31)))
    task = {"description": "look at notes", "prompt": "Read notes.py and say what it holds",
            "agent_type": "explore", "name": "looker"}  # fmt: skip
    # The sub-agent's requests come between the task call and the main agent's last answer.
    copilot(home, repo, cache, store, [Call("task", task), Call("view", {"path": str(notes)}),
                                       Say("It holds 30 lines."), Say("The helper read it.")],
            "Ask a helper about notes.py")  # fmt: skip
    events = imported(home, repo, cache, store)
    conn = sqlite3.connect(store)
    try:
        got = conn.execute("SELECT id, parent_session, parent_call, title FROM sessions "
                           "ORDER BY parent_session IS NOT NULL").fetchall()  # fmt: skip
        child = conn.execute("SELECT kind, role, tool, text FROM events WHERE session = "
                             "'cp-call_1' ORDER BY seq").fetchall()  # fmt: skip
    finally:
        conn.close()
    main = f"cp-{events.parent.name}"
    assert got == [(main, None, None, "Ask a helper about notes.py"),
                   ("cp-call_1", main, "call_1", "looker")]  # fmt: skip
    assert [(k, r or t) for k, r, t, _ in child] == [
        ("message", "user"), ("message", "assistant"), ("call", "read"), ("result", "read"),
        ("message", "assistant")]  # fmt: skip
    assert child[0][3] == task["prompt"] and child[-1][3] == "It holds 30 lines."


SUMMARY = "Summary: notes.py was read and three counts were run."


def summary_request(request: dict[str, Any]) -> Say | None:
    """Copilot's compaction asks the model for a summary (in the background, while the agent
    goes on): answered aside, so the script's steps stay in order."""
    last = request.get("messages", [{}])[-1].get("content")
    text = last if isinstance(last, str) else json.dumps(last)
    return Say(SUMMARY) if "create a detailed summary of the conversation" in text else None


def test_copilot_s_compaction_is_a_boundary_with_its_summary(tmp_path: Path, cache: Path) -> None:
    """With a small prompt limit Copilot compacts by itself (`session.compaction_start`, a
    `session.truncation`, then `session.compaction_complete` with the model's summary): the
    import has boundaries, each completion's holding that summary (a cancelled one is none),
    and the files-read table."""
    home, repo, store = tmp_path / "home", tmp_path / "repo", tmp_path / "store.db"
    home.mkdir()
    repo.mkdir()
    notes = repo / "notes.py"
    notes.write_text("".join(f"line_{i} = {i}\n" for i in range(1, 61)))
    steps: list[Call | Say] = [Call("view", {"path": str(notes)})]
    steps += [Call("bash", {"command": f"seq {n} {n + 2999}", "description": "count"})
              for n in (1, 2, 3)]  # fmt: skip
    steps += [Say("Counted.")]
    _, given, requests = copilot(home, repo, cache, store, steps, "Read and count",
                                 aside=summary_request, limit=16000)  # fmt: skip
    assert any(summary_request(r) for r in requests)  # Copilot asked for a summary
    events = imported(home, repo, cache, store)
    records = [json.loads(line) for line in events.read_text().splitlines()]
    kinds = [r["type"] for r in records]
    # Under load Copilot may start a second compaction and cancel it (`success: false`).
    applied = [r for r in records if r["type"] == "session.compaction_complete"
               and r["data"].get("success") is not False]  # fmt: skip
    assert applied
    conn = sqlite3.connect(store)
    try:
        bounds = conn.execute("SELECT text, data FROM events WHERE kind = 'compaction' "
                              "ORDER BY seq").fetchall()  # fmt: skip
        seen = dict(conn.execute("SELECT call_ref, seen_chars FROM events WHERE kind = 'result'"))
    finally:
        conn.close()
    assert len(bounds) == kinds.count("session.truncation") + len(applied)
    done = [text for text, data in bounds
            if json.loads(data)["source"] == "session.compaction_complete"]  # fmt: skip
    assert done and all(text == SUMMARY for text in done)
    rows = json.dumps(json.loads(bounds[0][1])["rows"])
    assert str(notes) in rows  # the files read before it, for the model after it
    # What reached the model is what was stored as seen; with this limit Copilot's truncation
    # drops some outputs before any request holds them (its boundary says so).
    assert set(given) <= set(seen) and len(seen) == 4
    assert all(seen[ref] == len(out) for ref, out in given.items())
