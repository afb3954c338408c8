"""The session files of Gemini CLI, OpenCode, pi, Copilot CLI, Cursor and aider (issue 19,
points 2-4), imported through the rules from fixtures under tests/fixtures/<agent>/.

Every fixture here is BUILT from the agent's documented format (realdata's FORMATS.md 5-11) and
the public examples in ../shared/realdata, not written by the agent: none of these CLIs runs
here against a scripted model yet (the live extensions are a later step). The real public files
are imported by test_import_agents_realdata.py. Each fixture session reads a file twice, searches
twice, edits, runs a long command and (where the format has them) is compacted and starts a
sub-agent: the store must hold the rules' answers (an unchanged stub, a same-result stub, a
diff where the old and new content are known, a cap) under the agent's own session key."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from opencode_db import build_db

from ctxview.cli import main
from ctxview.importers import formats
from ctxview.importers.detect import detect
from ctxview.importers.follow import follow
from ctxview.importers.runner import FileImporter
from ctxview.store import Reader, Writer
from ctxview.store.records import Event
from tests.agents.agent_project import Following, wait_for

FIX = Path(__file__).parent / "fixtures"
PI = next((FIX / "pi").rglob("*.jsonl"))
GEMINI_DIR = next((FIX / "gemini" / "tmp").iterdir())
GEMINI_JSON = next(GEMINI_DIR.glob("chats/*.json"))
GEMINI_JSONL = next(GEMINI_DIR.glob("chats/*.jsonl"))
COPILOT = next((FIX / "copilot").rglob("events.jsonl"))
CURSOR = next(p for p in (FIX / "cursor").rglob("*.jsonl") if p.parent.name != "subagents")
CURSOR_CHILD = next((FIX / "cursor").rglob("subagents/*.jsonl"))
OPENCODE = FIX / "opencode" / "storage"
AIDER = FIX / "aider" / ".aider.chat.history.md"


def run(store: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--store", str(store), *argv])
    return code, out.getvalue(), err.getvalue()


async def events_of(store: Path) -> dict[str, tuple[Any, list[Event]]]:
    async with await Reader.open(store) as reader:
        return {r.id: (r, await reader.events(r.id)) for r in await reader.sessions()}


def shown(store: Path, sid: str, event: Event) -> str:
    """The text the rules gave the model for a result."""

    async def get() -> str:
        async with await Reader.open(store) as reader:
            assert event.rid is not None
            body = await reader.body(sid, event.rid)
            return body.shown if body else ""

    return asyncio.run(get())


def results(events: list[Event]) -> list[tuple[str | None, str | None]]:
    return [(e.tool, e.rkind) for e in events if e.kind == "result"]


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


@pytest.mark.parametrize(("path", "fmt"), [
    (PI, formats.PI), (GEMINI_JSON, formats.GEMINI_JSON), (GEMINI_JSONL, formats.GEMINI),
    (COPILOT, formats.COPILOT), (CURSOR, formats.CURSOR), (CURSOR_CHILD, formats.CURSOR),
    (OPENCODE, formats.OPENCODE_STORAGE), (AIDER, formats.AIDER),
])  # fmt: skip
def test_each_format_is_told_from_its_content(path: Path, fmt: str, tmp_path: Path) -> None:
    assert detect(path) == fmt
    renamed = tmp_path / "renamed.txt"  # never from its name
    if path.is_file():
        shutil.copy(path, renamed)
        assert detect(renamed) == fmt


def test_pi(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert run(store, "import", str(PI))[0] == 0
    sessions = asyncio.run(events_of(store))
    row, evs = sessions["pi-0199aaaa-1111-7000-8000-000000000001"]
    assert row.source == "pi" and row.workspace == "/work/demo"
    assert results(evs) == [("read", "full"), ("read", "unchanged"), ("grep", "full"),
                            ("grep", "same"), ("bash", "full"), ("edit", "full"),
                            ("read", "full"), ("bash", "full")]  # fmt: skip
    # The relative and the absolute path are one file: the second read is the stub.
    stub = next(e for e in evs if e.rkind == "unchanged")
    assert "unchanged" in shown(store, row.id, stub).lower()
    bash = next(e for e in evs if e.kind == "result" and e.tool == "bash")
    assert bash.capped and bash.stored_lines == 600
    comp = [e for e in evs if e.kind == "compaction"]
    assert len(comp) == 1 and comp[0].extra["tokensBefore"] == 12345
    assert comp[0].text.startswith("# Context Checkpoint")
    # After the compaction a read of it is whole again, lines 2 of 3 (pi's note gives the length).
    after = [e for e in evs if e.kind == "result"][6]
    assert (after.line_from, after.line_to, after.line_total) == (2, 2, 3)
    # The person's `!ls` is a result of its own; usage counted as pi counts it (additive).
    assert evs[-3].call_ref == "pi-bash:e0000001"
    usage = [e.extra["usage"] for e in evs if e.kind == "message" and "usage" in e.extra]
    assert usage[0] == {"input_tokens": 102, "output_tokens": 10, "cache_read_tokens": 50,
                        "cache_write_tokens": 5}  # fmt: skip


@pytest.mark.parametrize("path", [GEMINI_JSON, GEMINI_JSONL], ids=["json", "jsonl"])
def test_gemini(path: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert run(store, "import", str(path))[0] == 0
    ((row, evs),) = asyncio.run(events_of(store)).values()
    assert row.id.startswith("gm-5e551011-") and row.source == "gemini-cli"
    assert results(evs) == [("read", "full"), ("read", "unchanged"), ("grep", "full"),
                            ("grep", "same"), ("edit", "edit"), ("bash", "full"),
                            ("read", "full")]  # fmt: skip
    # The JSONL file wrote the first turn twice (running, then done): one call, one result.
    assert sum(e.call_ref == "read_file-1" for e in evs if e.kind == "result") == 1
    edit = shown(store, row.id, next(e for e in evs if e.rkind == "edit"))
    assert "-beta" in edit and "+BETA" in edit
    partial = [e for e in evs if e.kind == "result"][-1]
    assert (partial.line_from, partial.line_to, partial.line_total) == (1, 2, 5)
    first = next(e for e in evs if e.kind == "message" and e.role == "assistant")
    assert first.extra["usage"]["cache_read_tokens"] == 400
    assert first.extra["usage"]["input_tokens"] == 602  # cached is inside Gemini's input
    if path == GEMINI_JSON:
        assert row.workspace == "/work/demo"  # from .project_root beside chats/


def test_copilot(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert run(store, "import", str(COPILOT))[0] == 0
    sessions = asyncio.run(events_of(store))
    row, evs = sessions["cp-c0b1107-0000-4000-8000-000000000001"]
    assert row.source == "copilot-cli" and row.workspace == "/work/demo"
    assert results(evs) == [("read", "full"), ("read", "unchanged"), ("grep", "full"),
                            ("grep", "same"), ("bash", "full"), ("write", "created"),
                            ("task", "full")]  # fmt: skip
    assert kinds(evs).count("compaction") == 1  # session.truncation
    child, cevs = sessions["cp-task1"]
    assert child.parent_session == row.id and child.parent_call == "task1"
    assert results(cevs) == [("read", "full")]  # its own context: not a stub of the parent's
    assert [e.text for e in evs if e.role == "user"] == ["Look at notes.txt twice and grep"]


def test_a_cancelled_copilot_compaction_is_no_boundary(tmp_path: Path) -> None:
    """Copilot 1.0.102 writes `session.compaction_complete` with `success: false` when it cancels
    a compaction (seen with the real CLI under load): nothing was compacted, so the re-read after
    it is still a stub, and the session says why."""
    lines = COPILOT.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"session.truncation"' in line)
    cancelled = {"type": "session.compaction_complete", "id": "ev-x", "parentId": "ev-23",
                 "timestamp": "2026-05-01T10:00:24.500Z",
                 "data": {"success": False, "error": "Compaction Cancelled", "outcome": "cancelled",
                          "tokenLimit": 128000, "trigger": "threshold"}}  # fmt: skip
    events = tmp_path / "session-state" / "c0b1107-0000-4000-8000-000000000001" / "events.jsonl"
    events.parent.mkdir(parents=True)
    events.write_text("\n".join([*lines[: at + 1], json.dumps(cancelled), *lines[at + 1 :]]))
    store = tmp_path / "s.db"
    assert run(store, "import", str(events))[0] == 0
    _, evs = asyncio.run(events_of(store))["cp-c0b1107-0000-4000-8000-000000000001"]
    assert kinds(evs).count("compaction") == 1  # the truncation alone
    notes = [e.text for e in evs if e.role == "system"]
    assert "Copilot's compaction did not happen: Compaction Cancelled" in notes


def test_cursor_and_its_sub_agent(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert run(store, "import", str(FIX / "cursor"))[0] == 0
    sessions = asyncio.run(events_of(store))
    row, evs = sessions[f"cu-{CURSOR.stem}"]
    assert row.source == "cursor"
    assert results(evs) == [("read", "full"), ("read", "unchanged"), ("grep", "full"),
                            ("grep", "same"), ("bash", "full"), ("Agent", "full")]  # fmt: skip
    assert evs[0].text == "Read notes.txt twice and grep"  # <user_query> unwrapped
    child, _ = sessions[f"cu-{CURSOR_CHILD.stem}"]
    agent_call = next(e for e in evs if e.kind == "call" and e.tool == "Agent")
    assert child.parent_session == row.id and child.parent_call == agent_call.call_ref


@pytest.mark.parametrize("kind", ["storage", "sqlite"])
def test_opencode(kind: str, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    source = OPENCODE if kind == "storage" else build_db(OPENCODE, tmp_path / "opencode.db")
    if kind == "sqlite":
        assert detect(source) == formats.OPENCODE
    assert run(store, "import", str(source))[0] == 0
    sessions = asyncio.run(events_of(store))
    row, evs = sessions["oc-ses_0001"]
    assert row.source == "opencode" and row.title == "Fix notes" and row.workspace == "/work/demo"
    assert results(evs) == [("read", "full"), ("read", "unchanged"), ("grep", "full"),
                            ("grep", "same"), ("edit", "edit"), ("bash", "full"),
                            ("task", "full")]  # fmt: skip
    first = next(e for e in evs if e.kind == "result")
    assert (first.line_from, first.line_to, first.line_total) == (1, 3, 3)
    assert [e.text for e in evs if e.kind == "compaction"] == ["Summary: notes.txt read and fixed."]
    child, cevs = sessions["oc-ses_0002"]
    assert child.parent_session == "oc-ses_0001" and child.parent_call == "call_t1"
    assert results(cevs) == [("bash", "full")]


def test_aider(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert run(store, "import", str(AIDER))[0] == 0
    sessions = asyncio.run(events_of(store))
    assert len(sessions) == 2 and all(s.startswith("ai-20260501T") for s in sessions)
    first = next(v for k, v in sessions.items() if "T100000" in k)
    row, evs = first
    assert row.source == "aider" and row.workspace == str(AIDER.parent)
    assert results(evs) == [("edit", "full"), ("bash", "full")]
    bash = next(e for e in evs if e.kind == "result" and e.tool == "bash")
    call = next(e for e in evs if e.kind == "call" and e.call_ref == bash.call_ref)
    assert json.loads(call.args or "{}")["command"] == "make test" and bash.capped
    assert [e.text for e in evs if e.role == "user"] == [
        "change beta to BETA in notes.txt", "/run make test", "thanks"]  # fmt: skip


ALL = [PI, GEMINI_JSON, GEMINI_JSONL, COPILOT, CURSOR, OPENCODE, AIDER]


def test_a_second_import_adds_nothing_and_sessions_lists_the_agents(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    code, out, err = run(store, "import", *map(str, ALL))
    assert code == 0, err
    before = asyncio.run(events_of(store))
    code, out, _ = run(store, "import", *map(str, ALL))
    assert code == 0 and out.startswith("Imported 0 new lines from 0 files")
    after = asyncio.run(events_of(store))
    assert {k: len(v[1]) for k, v in after.items()} == {k: len(v[1]) for k, v in before.items()}
    code, out, _ = run(store, "sessions")
    head, *lines = out.splitlines()
    assert "AGENT" in head
    # The columns line up, whatever each agent's ids are like (`gm-<uuid>` is 39 characters).
    at = head.index("STARTED")
    assert lines and all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d ", line[at:]) for line in lines), out
    for name, source in [("gemini", "gemini-cli"), ("opencode", "opencode"), ("pi", "pi"),
                         ("copilot", "copilot-cli"), ("cursor", "cursor"), ("aider", "aider")]:  # fmt: skip
        code, out, _ = run(store, "sessions", "--agent", name, "--json")
        rows = json.loads(out)
        assert rows and {r["source"] for r in rows} == {source}, name
        prefix = formats.PREFIX[source]
        assert all(r["id"].startswith(prefix + "-") for r in rows)
    code, out, _ = run(store, "sessions", "--agent", "claude")
    assert out.strip() == "No sessions of claude in the store."


def test_the_viewer_filter_takes_an_agent(tmp_path: Path) -> None:
    from ctxview.viewer.screens.sessions import matches

    store = tmp_path / "s.db"
    run(store, "import", str(PI), str(COPILOT))
    rows = [v[0] for v in asyncio.run(events_of(store)).values()]
    assert {r.source for r in rows if matches(r, ["agent:copilot"])} == {"copilot-cli"}
    assert {r.source for r in rows if matches(r, ["agent:pi"])} == {"pi"}
    assert {r.source for r in rows if matches(r, ["pi"])} >= {"pi"}


async def _wait(store: Path, sid: str, results_n: int, timeout: float = 30.0) -> int:
    deadline = asyncio.get_running_loop().time() + timeout
    got = -1
    while asyncio.get_running_loop().time() < deadline:
        if store.exists():
            with contextlib.suppress(Exception):
                async with await Reader.open(store) as reader:
                    row = await reader.session(sid)
                    got = row.results if row else -1
            if got == results_n:
                return got
        await asyncio.sleep(0.05)
    return got


async def test_follow_a_pi_session_as_it_is_appended(tmp_path: Path) -> None:
    lines = PI.read_bytes().splitlines(keepends=True)
    src, store = tmp_path / "s.jsonl", tmp_path / "s.db"
    src.write_bytes(b"".join(lines[:5]))  # the first read's result
    sid = "pi-0199aaaa-1111-7000-8000-000000000001"
    writer = await Writer.open(store)
    stop = asyncio.Event()
    task = asyncio.create_task(follow(writer, src, stop=stop, poll=5.0))
    try:
        assert await _wait(store, sid, 1) == 1
        with open(src, "ab") as f:
            f.write(b"".join(lines[5:7]) + lines[7][:20])  # the second read, half a line
        assert await _wait(store, sid, 2) == 2
        with open(src, "ab") as f:
            f.write(lines[7][20:] + b"".join(lines[8:]))
        assert await _wait(store, sid, 8) == 8
    finally:
        stop.set()
        await task
        await writer.close()
    _, evs = (await events_of(store))[sid]
    assert results(evs)[:2] == [("read", "full"), ("read", "unchanged")]


async def test_follow_a_gemini_document_rewritten_whole(tmp_path: Path) -> None:
    """Gemini rewrites its JSON document at each update: each step imports the new messages;
    a last message whose tool call is still running waits for the next rewrite."""
    doc = json.loads(GEMINI_JSON.read_text())
    src, store = tmp_path / "session-x.json", tmp_path / "s.db"
    running = json.loads(json.dumps(doc))
    running["messages"] = running["messages"][:3]
    running["messages"][2]["toolCalls"][0]["status"] = "executing"
    src.write_text(json.dumps(running, indent=2))
    async with await Writer.open(store) as writer:
        importer = FileImporter(writer, src)
        await importer.step(live=True)
        sid = "gm-5e551011-aaaa-4bbb-8ccc-000000000001"
        assert (await events_of(store))[sid][0].results == 1  # the second read is still running
        src.write_text(json.dumps(doc, indent=2))
        await importer.step(live=True)
        await importer.step(live=True)  # nothing new: nothing twice
    row, evs = (await events_of(store))[sid]
    assert results(evs)[:2] == [("read", "full"), ("read", "unchanged")] and row.results == 7


AIDER_REAL = FIX / "aider-real" / ".aider.chat.history.md"  # written by the real aider 0.86.2


async def test_follow_an_aider_log_whose_last_block_grows_after_a_pause(tmp_path: Path) -> None:
    """The log's last block is imported once the file has been still a moment (aider writes
    nothing when it exits), held while it is being written, and what aider appends to it later
    (its "Applied edit" after a pause) is imported then: not lost, nothing twice."""
    text = AIDER_REAL.read_text()
    cut = text.index("> Applied edit to hello.py")
    src, store = tmp_path / ".aider.chat.history.md", tmp_path / "s.db"

    def write(body: str, *, still: bool) -> None:
        src.write_text(body)
        if still:  # as if written a while ago
            old = src.stat().st_mtime - 10
            os.utime(src, (old, old))

    async def system_texts(sid: str) -> list[str]:
        _, evs = (await events_of(store))[sid]
        return [e.text or "" for e in evs if e.kind == "message" and e.role == "system"]

    async with await Writer.open(store) as writer:
        importer = FileImporter(writer, src)
        write(text[:cut], still=False)  # aider is writing its report
        await importer.step(live=True)
        [sid] = (await events_of(store)).keys()
        assert not any(t.startswith("Tokens:") for t in await system_texts(sid))
        write(text[:cut], still=True)
        await importer.step(live=True)
        assert (await system_texts(sid))[-1].startswith("Tokens: 2.4k sent")
        assert (await events_of(store))[sid][0].results == 0
        write(text, still=True)  # then "Applied edit to hello.py" in the same block
        await importer.step(live=True)
        await importer.step(live=True)
    row, evs = (await events_of(store))[sid]
    assert results(evs) == [("edit", "full")] and row.results == 1
    said = await system_texts(sid)
    assert said[-2:] == ["Tokens: 2.4k sent, 38 received.", "Applied edit to hello.py"]
    # An import of the whole file afterwards adds nothing.
    _, out, _ = await asyncio.to_thread(run, store, "import", str(src))
    assert out.startswith("Imported 0 new lines"), out


def test_a_bad_file_of_each_format_is_one_sentence(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    bad = tmp_path / "session-x.json"
    bad.write_text('{\n  "sessionId": "x",\n  "projectHash": "y",\n  "messages": [\n')
    code, _, err = run(store, "import", str(bad))
    assert code == 1 and "neither a Claude Code nor a Codex transcript" in err
    db = tmp_path / "other.db"
    import sqlite3

    sqlite3.connect(db).executescript("CREATE TABLE sessions (id TEXT);")
    code, _, err = run(store, "import", str(db))
    assert code == 1 and err.count("\n") == 1 and "not OpenCode's" in err


def _titles(store: Path) -> dict[str, str]:
    with contextlib.closing(sqlite3.connect(store)) as db:
        return dict(db.execute("SELECT id, title FROM sessions").fetchall())


def _retitle(db: Path, titles: dict[str, str]) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.executemany("UPDATE session SET title = ? WHERE id = ?",
                         [(t, s) for s, t in titles.items()])  # fmt: skip


def test_opencodes_placeholder_title_is_no_title_and_its_later_one_is(tmp_path: Path) -> None:
    """OpenCode names a session `New session - <time>` (a child `Child session - <time>`) until
    its title model answers: no title, so the first prompt names the session; the title
    OpenCode gives later names it from the next import on (a follow's), with nothing new else."""
    store = tmp_path / "s.db"
    db = build_db(OPENCODE, tmp_path / "opencode.db")
    _retitle(db, {"ses_0001": "New session - 2026-05-01T10:00:00.000Z",
                  "ses_0002": "Child session - 2026-05-01T10:00:05.000Z"})  # fmt: skip
    assert run(store, "import", str(db))[0] == 0
    titles = _titles(store)
    assert titles["oc-ses_0001"] == "Read notes.txt twice, grep twice, edit, test", titles
    assert not titles["oc-ses_0002"].startswith("Child session"), titles
    _retitle(db, {"ses_0001": "Fix the notes"})
    assert run(store, "import", str(db))[0] == 0
    assert _titles(store)["oc-ses_0001"] == "Fix the notes"


def test_a_follow_takes_opencodes_prompt_written_after_its_message(tmp_path: Path) -> None:
    """OpenCode writes a prompt's message, then, in a transaction of its own, the part that holds
    its text (seen polling the real OpenCode 1.18's database as it runs): `ctxview follow` that
    reads in between waits for the text, rather than storing a prompt without it and never
    again."""
    storage = tmp_path / "storage"
    for src in (next(OPENCODE.glob("session/*/ses_0001.json")),
                OPENCODE / "message" / "ses_0001" / "msg_0001.json"):  # fmt: skip
        (storage / src.relative_to(OPENCODE)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, storage / src.relative_to(OPENCODE))
    db = build_db(storage, tmp_path / "opencode.db")  # the prompt's message, no part yet
    store = tmp_path / "s.db"
    part = json.loads((OPENCODE / "part" / "msg_0001" / "prt_000100.json").read_text())
    following = Following(db, tmp_path, {**os.environ, "CTXVIEW_STORE": str(store)})
    try:
        # The follow has read the database as it is: the session stored, its prompt held.
        wait_for(store, lambda: "oc-ses_0001" in _titles(store), "the session")
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (part["id"], "msg_0001",
                         "ses_0001", 0, 0, json.dumps({"type": "text", "text": part["text"]})))  # fmt: skip
        wait_for(store, lambda: _messages(store), "the prompt")
    finally:
        following.stop()
    assert _messages(store) == [("user", part["text"])]


def _messages(store: Path) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(store)) as db:
        return db.execute("SELECT role, text FROM events WHERE kind = 'message' ORDER BY seq"
                          ).fetchall()  # fmt: skip


async def test_a_follow_of_opencodes_database_before_its_tables_waits_for_them(
    tmp_path: Path,
) -> None:
    """OpenCode makes its database, then its tables: a follow started in between (with OpenCode)
    waits for them rather than refusing the file as some other program's database."""
    db = tmp_path / "opencode.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")  # the file made, no table in it
    assert detect(db) is None
    store = tmp_path / "s.db"
    writer = await Writer.open(store)
    stop = asyncio.Event()
    task = asyncio.create_task(follow(writer, db, stop=stop, poll=0.05))
    try:
        await asyncio.sleep(0.3)  # a few rounds on the blank database
        assert not task.done()
        build_db(OPENCODE, db)  # the tables, and a session in them
        deadline = time.monotonic() + 30
        while "oc-ses_0001" not in _titles(store):
            assert time.monotonic() < deadline and not task.done(), "never followed"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task
        await writer.close()
