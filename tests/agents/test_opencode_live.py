"""The real OpenCode (1.18.33, `opencode run`) against the scripted Messages API: plain, it runs
headless and the model gets OpenCode's own outputs; with `ctxview install opencode` its plugin
gives the model the 3.0.0 text of every tool, and the store holds one session `oc-<id>` with
exactly the texts the model was sent."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agent_project import Following, wait_for
from engine_held import down_then_back
from fake_anthropic import FakeAnthropic
from opencode_helpers import Project, needs_opencode, project, texts, tool_results

from ctxview.agents.engine_socket import socket_file
from ctxview.agents.hook_client import stop

pytestmark = [needs_opencode, pytest.mark.e2e]


def _session_of(events: list[dict[str, Any]]) -> str:
    return next(e["sessionID"] for e in events if e.get("sessionID"))


def _stored(store: Path) -> list[tuple[str, str, str | None]]:
    """(session id, call_ref, shown) of every result, in order."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return list(conn.execute(
            "SELECT e.session, e.call_ref, b.shown FROM events e JOIN bodies b ON b.session = "
            "e.session AND b.rid = e.rid WHERE e.kind = 'result' ORDER BY e.seq"))  # fmt: skip
    finally:
        conn.close()


def _unreachable(p: Project) -> None:
    """The installed plugin pointed at a socket nobody listens on, in a private folder of its
    own: the engine it starts (at the store's real socket) cannot be reached."""
    dead = p.root.parent / "dead"
    dead.mkdir(mode=0o700)
    plugin = p.root / ".opencode" / "plugin" / "ctxview.js"
    text = plugin.read_text()
    real = json.dumps(socket_file(str(p.store)))
    assert real in text
    plugin.write_text(text.replace(real, json.dumps(str(dead / "engine.sock"))))


def _script(p: Project) -> tuple[Path, list[dict[str, Any]]]:
    f = p.root / "a.py"
    f.write_text("".join(f"line {i}\n" for i in range(1, 41)))
    return f, [
        {"tool": "read", "input": {"filePath": str(f)}},
        {"tool": "read", "input": {"filePath": str(f)}},
        {"tool": "read", "input": {"filePath": str(f), "offset": 5, "limit": 3}},
        {"tool": "bash", "input": {"command": "seq 1 1000", "description": "count"}},
        {"tool": "grep", "input": {"pattern": "line 3"}},
        {"tool": "grep", "input": {"pattern": "line 3"}},
        {"tool": "edit", "input": {"filePath": str(f), "oldString": "line 7\n",
                                   "newString": "line seven\n"}},
        {"text": "Done."},
    ]  # fmt: skip


def test_plain_opencode_runs_headless_against_the_scripted_model(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        f, steps = _script(p)
        with FakeAnthropic([*steps[:2], {"text": "Done."}]) as api:
            p.write_config(api.url)
            events = p.run("read a.py twice")
        got = tool_results(api.main_requests[-1])
        assert list(got) == ["toolu_0001_read", "toolu_0002_read"]
        # OpenCode's own read: its markers and its `n: text` lines, twice the same.
        first = got["toolu_0001_read"]
        assert f"<path>{f}</path>" in first and "\n7: line 7\n" in first
        assert got["toolu_0002_read"] == first
        assert _session_of(events).startswith("ses_")
        assert not p.store.exists()  # nothing of ctxview's ran


def test_the_plugin_gives_the_model_every_rule_and_the_store_holds_it(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        f, steps = _script(p)
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            done = p.ctxview("install", "opencode")
            assert done.returncode == 0, done.stderr
            assert (p.root / ".opencode" / "plugin" / "ctxview.js").exists()
            events = p.run("go")
        sid = _session_of(events)
        got = tool_results(api.main_requests[-1])
        read1, read2, rng = got["toolu_0001_read"], got["toolu_0002_read"], got["toolu_0003_read"]
        # §1: the id and the bracket, then OpenCode's numbered lines.
        assert read1.startswith(f"[#1000 {f} lines 1-40 of 40 sha ")
        assert read1.split("\n")[1:3] == ["1: line 1", "2: line 2"]
        # §2: the unchanged stub, for the whole file and for a range inside it.
        sha = read1.split(" sha ")[1].split("]")[0]
        assert read2 == (f"[#1001 {f} lines 1-40 of 40 sha {sha}] Unchanged since #1000, "
                         "which already shows lines 1-40.")  # fmt: skip
        assert rng == (f"[#1002 {f} lines 5-7 of 40 sha {sha}] Unchanged since #1000, "
                       "which already shows lines 1-40.")  # fmt: skip
        # §3: a long command's output capped: head, the elision line naming the id, tail.
        bash = got["toolu_0004_bash"].split("\n")
        assert bash[0] == "[#1003]" and bash[1] == "1" and bash[-1] == "1000"
        elided = [line for line in bash if "#1003" in line and "lines" in line]
        assert len(elided) == 1 and "700" in elided[0], bash[195:205]
        assert len(bash) < 400
        # §6: the same search with the same result is the stub.
        assert got["toolu_0005_grep"].startswith("[#1004]\n") and "Line 3: line 3" in got[
            "toolu_0005_grep"]  # fmt: skip
        assert got["toolu_0006_grep"] == "[#1005] Same result as #1004."
        # §5: the edit's diff, from the file before (the plugin read it) and after.
        edit = got["toolu_0007_edit"].split("\n")
        assert edit[0].startswith(f"[#1006 {f} sha ")
        assert "-line 7" in edit and "+line seven" in edit
        # The store: one session, keyed as its import keys it, with exactly those texts.
        rows = _stored(p.store)
        assert {s for s, _, _ in rows} == {f"oc-{sid}"}
        assert [(ref, shown) for _, ref, shown in rows] == list(got.items())


def test_a_failing_plugin_leaves_opencode_its_own_outputs(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        f, steps = _script(p)
        with FakeAnthropic([*steps[:2], {"text": "Done."}]) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            _unreachable(p)
            events = p.run("read a.py twice")
        got = tool_results(api.main_requests[-1])
        assert got["toolu_0001_read"].startswith(f"<path>{f}</path>")
        assert got["toolu_0002_read"] == got["toolu_0001_read"]
        log = [json.loads(line) for line in Path(f"{p.store}.hook-failures.jsonl").read_text(
            ).splitlines()]  # fmt: skip
        sid = _session_of(events)
        assert [(e["event"], e["tool_use_id"]) for e in log] == [
            ("opencode.tool", "toolu_0001_read"),
            ("opencode.tool", "toolu_0002_read"),
        ]
        assert all(e["session_id"] == sid for e in log)
        doctor = p.ctxview("doctor").stdout
        assert "opencode.tool" in doctor, doctor
        assert texts(api.main_requests[-1])  # the conversation went on


def test_opencode_compaction_records_a_boundary_and_gives_the_files_read_table(
    tmp_path: Path,
) -> None:
    with project(tmp_path) as p:
        f, _ = _script(p)
        steps = [
            {"tool": "read", "input": {"filePath": str(f)}},
            # Its usage fills the model's context: OpenCode compacts before the next request.
            {"tool": "bash", "input": {"command": "echo hi", "description": "hi"},
             "input_tokens": 60_000},
            {"tool": "read", "input": {"filePath": str(f)}},
            {"text": "Done."},
        ]  # fmt: skip
        with FakeAnthropic(steps) as api:
            p.write_config(api.url, context=50_000)
            assert p.ctxview("install", "opencode").returncode == 0
            events = p.run("go")
        sid = _session_of(events)
        summarised = [r for r in api.requests if not r.get("tools")
                      and "Scripted session" not in json.dumps(r.get("system"))]  # fmt: skip
        after = api.main_requests[-1]
        sent = texts(after)
        table = next(t for t in sent if t.startswith("## Files read"))
        assert f"{f}" in table and "#1000" in table, table
        # The dedupe table was emptied: the read after the compaction is in full again.
        got = tool_results(after)
        assert got["toolu_0003_read"].startswith(f"[#1002 {f} lines 1-40 of 40 sha "), got
        assert "\n1: line 1\n" in got["toolu_0003_read"]
        conn = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
        try:
            kinds = [k for (k,) in conn.execute(
                "SELECT kind FROM events WHERE session = ? AND kind IN ('result', 'compaction') "
                "ORDER BY seq", (f"oc-{sid}",))]  # fmt: skip
            data = json.loads(conn.execute("SELECT data FROM events WHERE kind = 'compaction'"
                                           ).fetchone()[0])  # fmt: skip
        finally:
            conn.close()
        assert kinds == ["result", "result", "compaction", "result"]
        assert data["table"] == table
        assert summarised  # OpenCode's summary request reached the model
        # The import of OpenCode's database adds its messages, not a second boundary or call.
        done = p.ctxview("import", str(p.database))
        assert done.returncode == 0, done.stderr
        conn = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
        try:
            kinds = [k for (k,) in conn.execute(
                "SELECT kind FROM events WHERE kind IN ('result', 'compaction', 'message') "
                "ORDER BY seq")]  # fmt: skip
        finally:
            conn.close()
        assert [k for k in kinds if k != "message"] == ["result", "result", "compaction", "result"]
        assert "message" in kinds


def test_the_plugins_recall_answers_from_this_sessions_store(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        steps = [
            {"tool": "bash", "input": {"command": "seq 1 1000", "description": "count"}},
            {"tool": "recall", "input": {"id": "#1000", "offset": None, "limit": None}},
            {"tool": "recall", "input": {"id": "1000", "offset": 998, "limit": 2}},
            {"tool": "recall", "input": {"id": "#ffff", "offset": None, "limit": None}},
            {"text": "Done."},
        ]
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            events = p.run("go")
        sid = _session_of(events)
        offered = [t["name"] for t in api.main_requests[0]["tools"]]
        assert "recall" in offered, offered
        got = tool_results(api.main_requests[-1])
        assert "lines elided" in got["toolu_0001_bash"]  # capped: the model lacks lines
        # §4: the whole output again, then a window of it; an unknown id in one line.
        whole = got["toolu_0002_recall"].split("\n")
        assert whole[0] == "[#1001 recall #1000 lines 1-1000 of 1000]"
        assert whole[1:] == [str(i) for i in range(1, 1001)]
        assert got["toolu_0003_recall"] == "[#1002 recall #1000 lines 998-999 of 1000]\n998\n999"
        assert got["toolu_0004_recall"] == "[#1003] No stored result #ffff in this session."
        # Each recall stored once, in this session, with the text the model got.
        rows = _stored(p.store)
        assert {s for s, _, _ in rows} == {f"oc-{sid}"}
        assert [(ref, shown) for _, ref, shown in rows] == list(got.items())


def test_recall_with_the_engine_down_says_so_and_opencode_goes_on(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        steps = [{"tool": "recall", "input": {"id": "#1000", "offset": None, "limit": None}},
                 {"text": "Done."}]  # fmt: skip
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            _unreachable(p)
            events = p.run("go")
        sid = _session_of(events)
        answer = tool_results(api.main_requests[-1])["toolu_0001_recall"]
        assert answer.startswith("recall failed: ctxview's engine did not answer ("), answer
        assert f"`ctxview recall ID --session oc-{sid}`" in answer and "\n" not in answer
        log = [json.loads(line) for line in Path(f"{p.store}.hook-failures.jsonl").read_text(
            ).splitlines()]  # fmt: skip
        assert [(e["event"], e["tool_use_id"], e["session_id"]) for e in log] == [
            ("opencode.recall", "toolu_0001_recall", sid)]  # fmt: skip
        assert any(e.get("type") == "text" for e in events)  # the run went on to its answer


def _messages(store: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT role, text FROM events WHERE kind = 'message' "
                                 "ORDER BY seq"))  # fmt: skip
    finally:
        conn.close()


def _follow_until(p: Project, path: Path, said: tuple[str, str]) -> None:
    """`ctxview follow --no-view PATH` until the store has the message `said`, then ^C."""
    following = Following(path, p.root, p.env())
    try:
        wait_for(p.store, lambda: said in _messages(p.store), f"the message {said}", timeout=90)
    finally:
        following.stop()


def test_import_and_follow_of_a_plugged_session_add_its_messages_not_its_calls(
    tmp_path: Path,
) -> None:
    with project(tmp_path) as p:
        f, steps = _script(p)
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            sid = _session_of(p.run("go"))
        hooked = _stored(p.store)
        assert len(hooked) == 7
        # `ctxview import` of OpenCode's data folder: the prompts and answers join the session,
        # the calls the plugin stored are not stored again.
        done = p.ctxview("import", str(p.database.parent))
        assert done.returncode == 0, done.stderr
        assert _stored(p.store) == hooked, done.stderr
        said = _messages(p.store)
        assert ("user", "go") in said and ("assistant", "Done.") in said
        # The session goes on, plugged, while `follow` reads OpenCode's database.
        more = [{"tool": "read", "input": {"filePath": str(f)}}, {"text": "Done again."}]
        with FakeAnthropic(more, prefix="b") as api:
            p.write_config(api.url)
            p.run("again", "--session", sid)
        hooked = _stored(p.store)
        assert len(hooked) == 8 and hooked[-1][1] == "toolu_b0001_read"
        _follow_until(p, p.database, ("assistant", "Done again."))
        assert _stored(p.store) == hooked
        said = _messages(p.store)
        assert said.count(("user", "go")) == 1 and ("user", "again") in said
        conn = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
        try:
            assert [s for (s,) in conn.execute("SELECT id FROM sessions")] == [f"oc-{sid}"]
        finally:
            conn.close()


def test_the_plugin_starts_the_engine_again_when_it_has_gone(tmp_path: Path) -> None:
    """The engine exits after a long idle time (or is stopped): the plugin's next call starts it
    again, within the same OpenCode run, and the session goes on where it was."""
    with project(tmp_path) as p:
        f = p.root / "a.py"
        f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
        read = {"tool": "read", "input": {"filePath": str(f)}}

        def engine_gone(body: dict[str, Any]) -> dict[str, Any]:
            assert stop(p.store)  # the engine answered the first read, and has now exited
            return read

        with FakeAnthropic([read, engine_gone, {"text": "Done."}]) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            p.run("go")
        got = tool_results(api.main_requests[-1])
        assert got["toolu_0001_read"].startswith(f"[#1000 {f} lines 1-10 of 10 sha ")
        assert got["toolu_0002_read"].startswith(f"[#1001 {f} lines 1-10 of 10 sha "), got
        assert got["toolu_0002_read"].endswith("Unchanged since #1000, which already shows "
                                               "lines 1-10.")  # fmt: skip
        assert not Path(f"{p.store}.hook-failures.jsonl").exists()


def test_a_call_the_plugin_missed_is_imported_once_beside_the_plugged_ones(tmp_path: Path) -> None:
    """The engine is down at the second call (the plugin records it and OpenCode's own output
    goes to the model) and back for the third: `ctxview import` of OpenCode's database then
    stores the missed call once, in the plugged session, past the ids the engine gave, with the
    rules applied to it as the import replays the session in order; a second import adds
    nothing."""
    with project(tmp_path) as p:
        f = p.root / "a.py"
        f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
        g = p.root / "b.py"
        g.write_text("".join(f"other {i}\n" for i in range(1, 6)))
        read_f = {"tool": "read", "input": {"filePath": str(f)}}
        steps = [read_f, *down_then_back(p.store, [read_f], {"tool": "read", "input": {
            "filePath": str(g)}}), read_f, {"text": "Done."}]  # fmt: skip
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            sid = _session_of(p.run("go"))
        got = tool_results(api.main_requests[-1])
        assert got["toolu_0001_read"].startswith(f"[#1000 {f} lines 1-10 of 10 sha ")
        assert got["toolu_0002_read"].startswith(f"<path>{f}</path>")  # OpenCode's own
        assert got["toolu_0003_read"].startswith(f"[#1001 {g} lines 1-5 of 5 sha ")
        assert got["toolu_0004_read"].startswith(f"[#1002 {f} lines 1-10 of 10 sha ")
        log = [json.loads(line) for line in Path(f"{p.store}.hook-failures.jsonl").read_text(
            ).splitlines()]  # fmt: skip
        # (besides the plugin's own try to start the engine: `_ping`, which could not)
        assert [
            (e["event"], e.get("tool_use_id")) for e in log if e["event"].startswith("opencode.")
        ] == [("opencode.tool", "toolu_0002_read")]
        plugged = _stored(p.store)
        assert [ref for _, ref, _ in plugged] == ["toolu_0001_read", "toolu_0003_read",
                                                  "toolu_0004_read"]  # fmt: skip
        done = p.ctxview("import", str(p.database))
        assert done.returncode == 0, done.stderr
        rows = _stored(p.store)
        assert {s for s, _, _ in rows} == {f"oc-{sid}"}
        assert rows[:3] == plugged  # the plugged calls as the model got them, untouched
        assert [ref for _, ref, _ in rows] == [*(r for _, r, _ in plugged), "toolu_0002_read"]
        # The missed read as the import's replay of the session gives it, under the next id past
        # the engine's: in full, as the model got it (OpenCode's own output). Its sha is the
        # import's stand-in for the file's version (`Replay.read`), not the file's own the
        # plugin's reads carry, so it is not taken for a re-read of #1000.
        missed = rows[3][2]
        assert missed.startswith(f"[#1003 {f} lines 1-10 of 10 sha "), missed
        assert missed.split("\n")[1:3] == ["1: line 1", "2: line 2"], missed
        # Imported again, and followed: nothing more.
        assert p.ctxview("import", str(p.database)).returncode == 0
        assert _stored(p.store) == rows


def test_two_reads_the_plugin_missed_are_both_stored_in_full(tmp_path: Path) -> None:
    """Two reads of one file the plugin missed (the engine down: the model got OpenCode's own
    output of each, in full): `ctxview import` stores both in full, as the model got them, not
    the second as an "Unchanged since" stub of the first that the model never saw."""
    with project(tmp_path) as p:
        f = p.root / "a.py"
        f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
        g = p.root / "b.py"
        g.write_text("other\n")
        read_f = {"tool": "read", "input": {"filePath": str(f)}}
        steps = [{"tool": "read", "input": {"filePath": str(g)}},
                 *down_then_back(p.store, [read_f, read_f], read_f), {"text": "Done."}]  # fmt: skip
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            _session_of(p.run("go"))
        got = tool_results(api.main_requests[-1])
        assert got["toolu_0002_read"].startswith(f"<path>{f}</path>")  # OpenCode's own
        assert got["toolu_0003_read"].startswith(f"<path>{f}</path>")
        assert got["toolu_0004_read"].startswith(f"[#1001 {f} lines 1-10 of 10 sha ")
        done = p.ctxview("import", str(p.database))
        assert done.returncode == 0, done.stderr
        missed = {ref: text for _, ref, text in _stored(p.store)}
        for ref, rid in (("toolu_0002_read", "#1002"), ("toolu_0003_read", "#1003")):
            text = missed[ref]
            assert text.startswith(f"[{rid} {f} lines 1-10 of 10 sha "), text
            assert text.split("\n")[1:3] == ["1: line 1", "2: line 2"], text


def test_the_files_read_table_after_a_missed_read_gives_the_files_own_hash(
    tmp_path: Path,
) -> None:
    """A read the plugin answered, the same read missed (the engine down), then, the engine
    back, `ctxview import` of OpenCode's database (the missed read stored, and taken in by the
    engine at its next step) and OpenCode's compaction: the files-read table has one row for
    the file, the plugin's read with the file's own hash, not the import's stand-in (nor a
    second row for it)."""
    with project(tmp_path) as p:
        text = "".join(f"line {i}\n" for i in range(1, 11))
        f = p.root / "a.py"
        f.write_text(text)
        read_f = {"tool": "read", "input": {"filePath": str(f)}}

        def imported() -> dict[str, Any]:
            done = p.ctxview("import", str(p.database))
            assert done.returncode == 0, done.stderr
            # Its usage fills the model's context: OpenCode compacts before the next request.
            return {"tool": "bash", "input": {"command": "echo hi", "description": "hi"},
                    "input_tokens": 60_000}  # fmt: skip

        steps = [read_f, *down_then_back(p.store, [read_f], imported), {"text": "Done."}]
        with FakeAnthropic(steps) as api:
            p.write_config(api.url, context=50_000)
            assert p.ctxview("install", "opencode").returncode == 0
            p.run("go")
        assert "toolu_0002_read" in {ref for _, ref, _ in _stored(p.store)}  # imported
        table = next(t for t in texts(api.main_requests[-1]) if t.startswith("## Files read"))
        own = hashlib.sha256(text.encode()).hexdigest()[:8]
        rows = [row for row in table.split("\n") if row.startswith(f"| {f} ")]
        assert rows == [f"| {f} | 1-10 of 10 | {own} | #1000 |"], table


def test_a_session_followed_while_its_first_call_runs_stores_each_call_once(
    tmp_path: Path,
) -> None:
    """`ctxview follow` of OpenCode's database from before the first tool result reaches the
    plugin (a gate holds the first call): the follow takes the session from OpenCode's own
    record of it, the plugin's results land in that session, and the follow stores none of
    them a second time."""
    with project(tmp_path) as p:
        f = p.root / "a.py"
        f.write_text("".join(f"line {i}\n" for i in range(1, 41)))
        gate = tmp_path / "go"
        read = {"tool": "read", "input": {"filePath": str(f)}}
        steps = [{"tool": "bash", "input": {"command": f"until [ -e {gate} ]; do sleep 0.05; done",
                                            "description": "wait"}},
                 read, read, {"text": "Done."}]  # fmt: skip
        follows: list[Following] = []
        missed: list[BaseException] = []

        def follow_the_database() -> None:  # while the first call waits for the gate
            try:
                deadline = time.monotonic() + 120
                while not p.database.exists():
                    assert time.monotonic() < deadline, "OpenCode made no database"
                    time.sleep(0.05)
                follows.append(Following(p.database, p.root, p.env()))
                wait_for(p.store, lambda: ("user", "go") in _messages(p.store), "the prompt")
                assert _stored(p.store) == [], "a result before the gate"
            except BaseException as exc:
                missed.append(exc)
            finally:
                gate.touch()

        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            opener = threading.Thread(target=follow_the_database, daemon=True)
            opener.start()
            try:
                sid = _session_of(p.run("go"))
                opener.join(60)
                assert not missed, missed
                wait_for(p.store, lambda: ("assistant", "Done.") in _messages(p.store),
                         "OpenCode's last answer")  # fmt: skip
            finally:
                for following in follows:
                    following.stop()
        got = tool_results(api.main_requests[-1])
        stored = _stored(p.store)
        assert [(s, ref) for s, ref, _ in stored] == [(f"oc-{sid}", ref) for ref in got], stored
        assert {ref: shown for _, ref, shown in stored} == got  # each once, as the model got it
        assert "Unchanged since" in list(got.values())[-1], got
