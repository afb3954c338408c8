"""ctxview inside the real pi: `ctxview install pi`, then a scripted session over pi's RPC mode
(reads a file twice, a range of it, a long command, a search twice, an edit, a recall, pi's
compaction, a read after it). The requests the scripted model received hold every rule's text,
and the store holds one session `pi-<pi's session id>` with exactly those texts; `ctxview
import` of pi's own file lands in it and adds nothing. With the engine failing, pi's own
outputs reach the model and the failure is recorded; `uninstall` restores the project."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_project import Following, wait_for
from engine_held import down_then_back, engine_held_down
from fake_anthropic import FakeAnthropic
from pi_helpers import PiProject, Rpc, needs_pi, pi_project, results, texts

from ctxview.agents import failures
from ctxview.agents.hook_client import ask

A = "x = 1\ny = 2\nz = 3\nw = 4\n"
GREP = 'grep -rn "y =" --include=*.py .'


def _recall(body: dict[str, Any]) -> dict[str, Any]:
    first = results(body)["toolu_0001_read"]
    rid = re.match(r"\[(#[0-9a-f]{4}) ", first)
    assert rid, first
    return {"tool": "recall", "input": {"id": rid.group(1)}}


STEPS: list[Any] = [
    {"tool": "read", "input": {"path": "a.py"}},
    {"tool": "read", "input": {"path": "a.py"}},
    {"tool": "read", "input": {"path": "a.py", "offset": 2, "limit": 2}},
    {"tool": "bash", "input": {"command": "seq 1 3000"}},
    {"tool": "bash", "input": {"command": GREP}},
    {"tool": "bash", "input": {"command": GREP}},
    {
        "tool": "edit",
        "input": {"path": "a.py", "edits": [{"oldText": "y = 2", "newText": "y = 20"}]},
    },
    _recall,
    {"text": "Done one."},
    {"tool": "read", "input": {"path": "b.py"}},
    {"text": "Done two."},
]


def _session(p: PiProject, **env: str) -> FakeAnthropic:
    (p.root / "a.py").write_text(A)
    (p.root / "b.py").write_text("b = 1\n")
    (p.root / ".pi").mkdir(exist_ok=True)
    # pi keeps the last 20k tokens whole by default: this small session is compacted whole.
    (p.root / ".pi" / "settings.json").write_text(json.dumps(
        {"compaction": {"keepRecentTokens": 50}}))  # fmt: skip
    with FakeAnthropic(list(STEPS)) as api:
        p.provider(api.url)
        _around_a_compaction(Rpc(p, **env), "Now b.py")
    return api


def _around_a_compaction(rpc: Rpc, then: str) -> None:
    """A prompt, pi's compaction, then the prompt `then`, over pi's RPC (closed after)."""
    try:
        rpc.prompt("Work on a.py")
        assert rpc.compact()["success"]
        rpc.prompt(then)
    finally:
        rpc.close()


def _stored(p: PiProject) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with sqlite3.connect(p.store) as db:
        sessions = db.execute("SELECT id, source, json_extract(data, '$.hooked') FROM sessions"
                              ).fetchall()  # fmt: skip
        shown = db.execute(
            "SELECT e.call_ref, b.shown FROM events e JOIN bodies b ON b.session = e.session"
            " AND b.rid = e.rid WHERE e.kind = 'result' ORDER BY e.seq").fetchall()  # fmt: skip
    return sessions, shown


@needs_pi
def test_pi_session_gets_every_rule_and_the_store_holds_it_once(tmp_path: Path) -> None:
    with pi_project(tmp_path) as p:
        done = p.ctxview("install", "pi")
        assert done.returncode == 0, done.stderr
        api = _session(p)
        before = api.main_requests[8]  # the request after the recall, before the compaction
        got = results(before)
        assert re.fullmatch(r"\[#1000 a\.py lines 1-4 of 4 sha [0-9a-f]{8}\]\n1: x = 1\n"
                            r"2: y = 2\n3: z = 3\n4: w = 4", got["toolu_0001_read"])  # fmt: skip
        assert re.fullmatch(r"\[#1001 a\.py lines 1-4 of 4 sha [0-9a-f]{8}\] Unchanged since "
                            r"#1000, which already shows lines 1-4\.", got["toolu_0002_read"])  # fmt: skip
        assert re.fullmatch(r"\[#1002 a\.py lines 2-3 of 4 sha [0-9a-f]{8}\] Unchanged since "
                            r"#1000, which already shows lines 1-4\.", got["toolu_0003_read"])  # fmt: skip
        bash = got["toolu_0004_bash"]
        assert bash.startswith("[#1003]\n") and re.search(r"\n\[\d+ lines elided", bash), bash
        assert got["toolu_0005_bash"].startswith("[#1004]\n./a.py:2:y = 2")
        assert got["toolu_0006_bash"] == "[#1005] Same result as #1004."
        assert re.fullmatch(r"\[#1006 a\.py sha [0-9a-f]{8}\]\n@@ -1,4 \+1,4 @@\n x = 1\n"
                            r"-y = 2\n\+y = 20\n z = 3\n w = 4", got["toolu_0007_edit"])  # fmt: skip
        assert got["toolu_0008_recall"].startswith("[#1007 recall #1000 lines 1-4 of 4]\n1: x = 1")
        after = api.main_requests[9]  # the first request after pi's compaction
        said = texts(after)
        at = next(i for i, t in enumerate(said) if "<summary>" in t)
        assert re.match(r"## Files read before this summary\n", said[at + 1]), said
        assert re.search(r"\| a\.py \| 1-4 of 4 \| [0-9a-f]{8} \| #1000 \|", said[at + 1])
        last = results(api.main_requests[10])
        assert re.fullmatch(r"\[#1008 b\.py lines 1-1 of 1 sha [0-9a-f]{8}\]\n1: b = 1",
                            last["toolu_0009_read"])  # fmt: skip

        (pi_file,) = p.sessions()
        pid = json.loads(pi_file.read_text().splitlines()[0])["id"]
        sessions, shown = _stored(p)
        assert sessions == [(f"pi-{pid}", "pi", 1)]
        seen = {**got, **last}
        assert dict(shown) == seen  # exactly the texts the model got, each once
        with sqlite3.connect(p.store) as db:
            assert db.execute("SELECT count(*) FROM events WHERE kind = 'compaction'"
                              ).fetchone() == (1,)  # fmt: skip
        again = p.ctxview("import", str(pi_file))
        assert again.returncode == 0, again.stderr
        assert _stored(p) == (sessions, shown)  # the import is the same session: nothing new
        assert failures.read(p.store) == []


@needs_pi
def test_a_failing_engine_leaves_pis_own_outputs_and_is_recorded(tmp_path: Path) -> None:
    with pi_project(tmp_path) as p:
        assert p.ctxview("install", "pi").returncode == 0
        api = _session(p, CTXVIEW_HOOK_FAIL="1")
        got = results(api.main_requests[8])
        assert got["toolu_0001_read"] == A  # pi's own text, untouched
        assert got["toolu_0002_read"] == A
        assert got["toolu_0006_bash"] == "./a.py:2:y = 2\n"
        assert "Successfully" in got["toolu_0007_edit"]
        recorded = failures.read(p.store)
        assert {f["event"] for f in recorded} >= {"pi.tool_result"}
        assert all("CTXVIEW_HOOK_FAIL" in f["error"] for f in recorded)


@needs_pi
def test_uninstall_restores_the_project_exactly(tmp_path: Path) -> None:
    with pi_project(tmp_path) as p:
        (p.root / ".pi").mkdir()
        (p.root / ".pi" / "settings.json").write_text('{"theme": "dark"}\n')
        before = sorted((q.relative_to(p.root), q.read_bytes() if q.is_file() else None)
                        for q in p.root.rglob("*"))  # fmt: skip
        assert p.ctxview("install", "pi").returncode == 0
        assert (p.root / ".pi" / "extensions" / "ctxview.ts").is_file()
        assert p.ctxview("install", "pi").stdout.startswith("pi: already set up")
        done = p.ctxview("uninstall", "pi")
        assert done.returncode == 0, done.stderr
        after = sorted((q.relative_to(p.root), q.read_bytes() if q.is_file() else None)
                       for q in p.root.rglob("*"))  # fmt: skip
        assert after == before
        (p.root / ".pi" / "extensions").mkdir()
        (p.root / ".pi" / "extensions" / "ctxview.ts").write_text("export default () => {}\n")
        refused = p.ctxview("install", "pi")
        assert refused.returncode != 0 and "not ctxview's extension" in refused.stderr


@needs_pi
def test_a_call_the_extension_missed_is_stored_once_in_order(tmp_path: Path) -> None:
    """The engine is down at the second call (the extension records it and pi's own output goes
    to the model) and back for the third, whose step first takes in pi's file: the missed call
    (the same read as the first) is stored once, in the hooked session, before the third call's
    result and under the id before it; an import of pi's file afterwards adds nothing."""
    with pi_project(tmp_path) as p:
        (p.root / "a.py").write_text(A)
        held = engine_held_down(p.store)

        def engine_down(body: dict[str, Any]) -> dict[str, Any]:
            held.__enter__()
            return {"tool": "read", "input": {"path": "a.py"}}

        def engine_back(body: dict[str, Any]) -> dict[str, Any]:
            held.__exit__(None, None, None)
            ask(str(p.store), "_ping", b"", deadline=time.monotonic() + 10)  # started again
            return {"tool": "read", "input": {"path": "a.py"}}

        assert p.ctxview("install", "pi").returncode == 0
        read_a = {"tool": "read", "input": {"path": "a.py"}}
        with FakeAnthropic([read_a, engine_down, engine_back, {"text": "Done."}]) as api:
            p.provider(api.url)
            p.print("go")
        got = results(api.main_requests[-1])
        assert got["toolu_0001_read"].startswith("[#1000 a.py lines 1-4 of 4 sha ")
        assert got["toolu_0002_read"] == A  # pi's own
        assert re.fullmatch(r"\[#1002 a\.py lines 1-4 of 4 sha [0-9a-f]{8}\] Unchanged since "
                            r"#1000, which already shows lines 1-4\.", got["toolu_0003_read"])  # fmt: skip
        recorded = [(f["event"], f.get("tool_call_id")) for f in failures.read(p.store)
                    if f["event"].startswith("pi.")]  # fmt: skip
        assert recorded == [("pi.tool_result", "toolu_0002_read")], failures.read(p.store)
        (pi_file,) = p.sessions()
        pid = json.loads(pi_file.read_text().splitlines()[0])["id"]
        sessions, shown = _stored(p)
        assert sessions == [(f"pi-{pid}", "pi", 1)]
        assert [ref for ref, _ in shown] == ["toolu_0001_read", "toolu_0002_read",
                                             "toolu_0003_read"]  # fmt: skip
        assert shown[0][1] == got["toolu_0001_read"] and shown[2][1] == got["toolu_0003_read"]
        # The missed read in full, as the model got it (pi's own output), under its own id: its
        # sha is the import's stand-in for the file's version, so it is no re-read of #1000.
        assert re.fullmatch(r"\[#1001 a\.py lines 1-4 of 4 sha [0-9a-f]{8}\]\n1: x = 1\n"
                            r"2: y = 2\n3: z = 3\n4: w = 4", shown[1][1])  # fmt: skip
        assert p.ctxview("import", str(pi_file)).returncode == 0
        assert _stored(p) == (sessions, shown)


@needs_pi
def test_the_files_read_table_after_a_missed_read_gives_the_files_own_hash(
    tmp_path: Path,
) -> None:
    """A read the engine answered, the same read missed (the engine down: the model got pi's
    own output), the engine back, then pi's compaction: the files-read table after the summary
    has one row for the file, the engine's own read with the file's own hash, not the import's
    stand-in for the missed one (nor a second row for it)."""
    with pi_project(tmp_path) as p:
        (p.root / "a.py").write_text(A)
        (p.root / ".pi").mkdir(exist_ok=True)
        (p.root / ".pi" / "settings.json").write_text(json.dumps(
            {"compaction": {"keepRecentTokens": 50}}))  # fmt: skip
        assert p.ctxview("install", "pi").returncode == 0
        read_a = {"tool": "read", "input": {"path": "a.py"}}
        steps = [read_a, *down_then_back(p.store, [read_a], {"tool": "bash", "input": {
            "command": "true"}}), {"text": "Done one."}, {"text": "Done two."}]  # fmt: skip
        with FakeAnthropic(steps) as api:
            p.provider(api.url)
            _around_a_compaction(Rpc(p), "Now more")
        got = results(api.main_requests[3])
        assert got["toolu_0002_read"] == A  # pi's own: the missed call
        recorded = [(f["event"], f.get("tool_call_id")) for f in failures.read(p.store)]
        assert ("pi.tool_result", "toolu_0002_read") in recorded, recorded
        said = texts(api.main_requests[-1])
        at = next(i for i, t in enumerate(said) if "<summary>" in t)
        table = said[at + 1]
        assert table.startswith("## Files read before this summary\n"), said
        own = hashlib.sha256(A.encode()).hexdigest()[:8]
        rows = [row for row in table.split("\n") if row.startswith("| a.py ")]
        assert rows == [f"| a.py | 1-4 of 4 | {own} | #1000 |"], table


@needs_pi
def test_two_reads_the_extension_missed_are_both_stored_in_full(tmp_path: Path) -> None:
    """Two reads of one file, both missed (the model got pi's own output of each, in full): the
    hooked session stores both in full, as the model got them, not the second as an "Unchanged
    since" stub the model never saw; the engine's own read after them is full too (a missed
    read stubs nothing)."""
    with pi_project(tmp_path) as p:
        (p.root / "a.py").write_text(A)
        (p.root / "b.py").write_text("b = 1\n")
        assert p.ctxview("install", "pi").returncode == 0
        read_a = {"tool": "read", "input": {"path": "a.py"}}
        steps = [{"tool": "read", "input": {"path": "b.py"}},  # the engine up, then held down
                 *down_then_back(p.store, [read_a, read_a], read_a), {"text": "Done."}]  # fmt: skip
        with FakeAnthropic(steps) as api:
            p.provider(api.url)
            p.print("go")
        got = results(api.main_requests[-1])
        assert got["toolu_0002_read"] == got["toolu_0003_read"] == A  # pi's own, both
        assert re.fullmatch(r"\[#1003 a\.py lines 1-4 of 4 sha [0-9a-f]{8}\]\n1: x = 1\n"
                            r"2: y = 2\n3: z = 3\n4: w = 4", got["toolu_0004_read"])  # fmt: skip
        _, shown = _stored(p)
        assert [ref for ref, _ in shown] == ["toolu_0001_read", "toolu_0002_read",
                                             "toolu_0003_read", "toolu_0004_read"]  # fmt: skip
        for (_, text), rid in zip(shown[1:3], ("#1001", "#1002"), strict=True):
            assert re.fullmatch(rf"\[{rid} a\.py lines 1-4 of 4 sha [0-9a-f]{{8}}\]\n1: x = 1\n"
                                r"2: y = 2\n3: z = 3\n4: w = 4", text), text  # fmt: skip
        assert shown[3][1] == got["toolu_0004_read"]
        (pi_file,) = p.sessions()
        assert p.ctxview("import", str(pi_file)).returncode == 0
        assert _stored(p)[1] == shown  # an import afterwards adds nothing


def _said(p: PiProject) -> list[str]:
    with sqlite3.connect(p.store) as db:
        return [r[0] for r in db.execute("SELECT text FROM events WHERE kind = 'message' AND "
                                         "role = 'assistant' AND text != ''")]  # fmt: skip


@needs_pi
def test_a_session_followed_while_its_first_call_runs_stores_each_call_once(
    tmp_path: Path,
) -> None:
    """`ctxview follow` of pi's session file from the moment pi writes it (once the model's
    first answer is in), while that answer's call runs: the follow takes the call's record
    before its result, into the session the extension made at pi's `session_start`; the
    extension's results then land there, and the follow stores none of them a second time."""
    with pi_project(tmp_path) as p:
        (p.root / "a.py").write_text(A)
        assert p.ctxview("install", "pi").returncode == 0
        gate = tmp_path / "go"
        read_a = {"tool": "read", "input": {"path": "a.py"}}
        steps: list[Any] = [
            {"tool": "bash", "input": {"command": f"until [ -e {gate} ]; do sleep 0.05; done"}},
            read_a, read_a, {"text": "Done."}]  # fmt: skip
        follows: list[Following] = []
        missed: list[BaseException] = []

        def follow_the_file() -> None:  # while the first call waits for the gate
            try:
                wait_for(p.store, p.sessions, "pi's session file", timeout=120)
                follows.append(Following(p.sessions()[0], p.root, p.ctxview_env()))
                wait_for(p.store, lambda: _stored(p)[0], "the session from pi's file")
                assert _stored(p)[1] == [], "a result before the gate"
            except BaseException as exc:
                missed.append(exc)
            finally:
                gate.touch()

        opener = threading.Thread(target=follow_the_file, daemon=True)
        opener.start()
        try:
            with FakeAnthropic(steps) as api:
                p.provider(api.url)
                p.print("go")
            opener.join(60)
            assert not missed, missed
            wait_for(p.store, lambda: "Done." in _said(p), "pi's last answer")
        finally:
            for following in follows:
                following.stop()
        got = results(api.main_requests[-1])
        (pi_file,) = p.sessions()
        pid = json.loads(pi_file.read_text().splitlines()[0])["id"]
        sessions, shown = _stored(p)
        assert sessions == [(f"pi-{pid}", "pi", 1)]
        assert [ref for ref, _ in shown] == ["toolu_0001_bash", "toolu_0002_read",
                                             "toolu_0003_read"]  # fmt: skip
        assert dict(shown) == got  # each once, as the model got it
        assert "Unchanged since #1001" in got["toolu_0003_read"], got
