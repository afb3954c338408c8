"""Importing small hand-written transcripts (tests/fixtures/import): every record kind handled,
bad lines, unknown kinds, idempotency, a growing file, a restart, truncation, neither format."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxview.importers.detect import CLAUDE, CODEX, NotTranscript, detect
from ctxview.importers.replay import numbered_lines
from ctxview.importers.runner import FileImporter, import_file
from ctxview.store import Reader, Writer
from ctxview.store.records import Event

FIXTURES = Path(__file__).parent / "fixtures" / "import"
CLAUDE_FILE = FIXTURES / "claude_session.jsonl"
SID = "cc-11111111-2222-3333-4444-555555555555"


async def imported(store: Path, *files: Path) -> list[Any]:
    writer = await Writer.open(store)
    try:
        async with writer.batch():
            return [await import_file(writer, f) for f in files]
    finally:
        await writer.close()


async def events_of(store: Path, sid: str) -> list[Event]:
    async with await Reader.open(store) as reader:
        return await reader.events(sid)


async def shown(store: Path, sid: str, rid: int) -> str:
    async with await Reader.open(store) as reader:
        body = await reader.body(sid, rid)
        assert body is not None
        return body.shown


def results(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind == "result"]


# Detection


def test_detect_formats() -> None:
    assert detect(CLAUDE_FILE) == CLAUDE
    assert detect(FIXTURES / "codex_rollout.jsonl") == CODEX
    assert detect(FIXTURES / "codex_legacy.jsonl") == CODEX
    for name in ("neither.jsonl", "neither.txt"):
        with pytest.raises(NotTranscript, match="neither a Claude Code nor a Codex transcript"):
            detect(FIXTURES / name)


def test_empty_file_waits(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert detect(empty) is None


def test_numbered_lines() -> None:
    assert numbered_lines("     3→a\n     4→b\n\n<system-reminder>x</system-reminder>") == (
        3,
        ["a", "b"],
    )
    assert numbered_lines("not numbered") is None


# Claude Code


async def test_claude_every_record_kind(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    [report] = await imported(store, CLAUDE_FILE)
    assert report.session == SID
    evs = await events_of(store, SID)
    res = results(evs)
    kinds = [(e.tool, e.rkind) for e in res]
    assert kinds == [
        ("read", "full"), ("read", "unchanged"), ("grep", "full"), ("grep", "same"),
        ("edit", "edit"), ("read", "full"), ("write", "created"), ("multiedit", "edit"),
        ("bash", "full"), ("read", "full"), ("Task", "full"), ("read", "full"),
        ("read", "unchanged"),
    ]  # fmt: skip
    # Every result is paired with its call by the source's tool_use id, call first.
    for r in res:
        calls = [e for e in evs if e.kind == "call" and e.call_ref == r.call_ref]
        assert len(calls) == 1 and calls[0].seq == r.seq - 1
    # The stub names the full read; the re-read after the edit is full (another generation).
    assert res[1].points_to == res[0].rid and res[3].points_to == res[2].rid
    assert res[5].sha != res[0].sha
    # After the compaction the dedupe table is empty: the same read is full, then a stub of it.
    assert res[11].rkind == "full" and res[12].points_to == res[11].rid
    # Edits are the engine's diff; the write of a new file is "Created".
    assert "-line 5\n+line five" in await shown(store, SID, res[4].rid)
    assert "Created, 2 lines." in await shown(store, SID, res[6].rid)
    # The big Bash output is capped; what the agent got is kept as seen_chars.
    assert res[8].capped and res[8].seen_chars > res[8].shown_chars
    assert all(r.seen_chars is not None for r in res)
    # The compaction: summary, the files-read table, its metadata.
    [comp] = [e for e in evs if e.kind == "compaction"]
    assert comp.text.startswith("This session is being continued")
    assert comp.extra["trigger"] == "auto" and comp.extra["rows"][0]["path"].endswith("app.py")
    # Micro-compaction is a system message with its metadata.
    micro = [
        e for e in evs if e.kind == "message" and e.extra.get("subtype") == "microcompact_boundary"
    ]
    assert micro and micro[0].extra["microcompact"]["compactedToolIds"] == ["t9"]


async def test_claude_split_messages_and_usage(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    await imported(store, CLAUDE_FILE)
    evs = await events_of(store, SID)
    assistant = [e for e in evs if e.kind == "message" and e.role == "assistant"]
    first = assistant[0]
    assert first.text == "Reading app.py." and first.extra["thinking"] == "Let me read."
    assert first.extra["usage"] == {"input_tokens": 5, "output_tokens": 20,
                                    "cache_read_tokens": 2000, "cache_write_tokens": 100}  # fmt: skip
    # msg_B is interrupted by its first tool result: the later part carries only what grew, so
    # usage summed over events counts each message once, at its largest.
    b = [e for e in assistant if e.extra.get("message_id") == "msg_B"]
    total_b = {k: sum(e.extra.get("usage", {}).get(k, 0) for e in b) for k in b[0].extra["usage"]}
    assert total_b["output_tokens"] == 30 and total_b["cache_read_tokens"] == 2000
    synthetic = [e for e in assistant if e.extra.get("model") == "<synthetic>"]
    assert synthetic and "usage" not in synthetic[0].extra
    user = [e for e in evs if e.kind == "message" and e.role == "user"]
    assert user[0].text == "Please look at app.py" and user[1].extra == {"meta": True}


async def test_bad_lines_are_skipped_and_reported(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    [report] = await imported(store, CLAUDE_FILE)
    assert [p.line for p in report.problems] == [13, 14, 15, 16]
    reasons = [p.reason for p in report.problems]
    assert reasons[0].startswith("not JSON")
    assert "unknown record type 'brand-new-kind'" in reasons[1]
    assert "message is str" in reasons[2] and "tool_use.id is int" in reasons[3]
    # The rest was imported: a bad assistant record left no trace.
    evs = await events_of(store, SID)
    assert not [e for e in evs if e.extra.get("message_id") == "msg_Z"]
    assert len(results(evs)) == 13


def test_cli_reports_problems_and_refuses_neither(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    run = subprocess.run(
        [sys.executable, "-m", "ctxview.cli", "import", "--store", str(store), str(CLAUDE_FILE)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "Skipped 4 records" in run.stderr
    assert f"{CLAUDE_FILE}:14: unknown record type" in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "ctxview.cli", "import", "--store", str(store),
         str(FIXTURES / "neither.txt")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.strip().count("\n") == 0
    assert "is neither a Claude Code nor a Codex transcript" in run.stderr


async def test_sub_agent_file_links_to_its_task_call(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    project = FIXTURES / "project"
    agent = next(project.rglob("agent-a1b2c3d.jsonl"))
    main = next(project.glob("*.jsonl"))
    # Either order links the two.
    for order in ((main, agent), (agent, main)):
        db = tmp_path / f"{order[0].stem}.db"
        await imported(db, *order)
        async with await Reader.open(db) as reader:
            sub = await reader.session("cc-a1b2c3d")
            assert sub is not None
            assert (sub.parent_session, sub.parent_call) == (SID, "t11")
            assert sub.title == "Explore the repo"  # from agent-<id>.meta.json
            assert sub.results == 1
    del store


async def test_inline_sidechain_becomes_child_session(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    await imported(store, FIXTURES / "claude_inline_sidechain.jsonl")
    async with await Reader.open(store) as reader:
        rows = {r.id: r for r in await reader.sessions()}
    parent = "cc-99999999-2222-3333-4444-555555555555"
    [child] = [r for r in rows.values() if r.parent_session == parent]
    assert child.parent_call == "p1" and child.title == "Make types"
    assert child.results == 1 and rows[parent].results == 1
    evs = await events_of(store, child.id)
    assert evs[0].role == "user" and evs[0].text == "Create the types"
    assert [e.tool for e in results(evs)] == ["list"]


# Codex


async def test_codex_rollout(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    [report] = await imported(store, FIXTURES / "codex_rollout.jsonl")
    sid = "cx-019a0000-0000-7000-8000-000000000001"
    assert report.session == sid
    assert [(p.line, p.reason) for p in report.problems] == [
        (30, "unknown response item 'brand_new_item'")
    ]
    evs = await events_of(store, sid)
    res = results(evs)
    assert [(e.tool, e.rkind) for e in res] == [
        ("grep", "full"), ("grep", "same"), ("read", "full"), ("read", "unchanged"),
        ("apply_patch", "created"), ("apply_patch", "full"), ("read", "full"), ("read", "full"),
    ]  # fmt: skip
    # The injected environment context is not a user message; the typed prompt is, once.
    user = [e.text for e in evs if e.kind == "message" and e.role == "user"]
    assert user == ["Fix the bug"]
    # Usage: cached input is inside Codex's input; normalised to Claude's additive counting.
    first = next(e for e in evs if e.kind == "message" and e.role == "assistant")
    assert first.extra["usage"] == {"input_tokens": 800, "output_tokens": 50,
                                    "cache_read_tokens": 200, "cache_write_tokens": 0}  # fmt: skip
    total_out = sum(e.extra.get("usage", {}).get("output_tokens", 0) for e in evs)
    assert total_out == 50 + 20 + 20 + 20 + 30 + 30 + 30 + 40
    [comp] = [e for e in evs if e.kind == "compaction"]
    assert comp.text == "Summary: fixed the bug in main.py."
    assert comp.extra["source"] == "compacted"


async def test_codex_legacy(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    [report] = await imported(store, FIXTURES / "codex_legacy.jsonl")
    assert report.session == "cx-0199aaaa-0000-7000-8000-000000000002" and not report.problems
    evs = await events_of(store, report.session)
    assert [e.text for e in evs if e.kind == "message" and e.role == "user"] == ["List files"]
    assert [(e.tool, e.rkind) for e in results(evs)] == [("list", "full")]
    assert [e.text for e in evs if e.role == "assistant"][-1] == "a and b."


# Idempotency, growth, restart, truncation


async def test_reimport_adds_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    await imported(store, CLAUDE_FILE, FIXTURES / "codex_rollout.jsonl")
    async with await Reader.open(store) as reader:
        before = {r.id: r.events for r in await reader.sessions()}
    reports = await imported(store, CLAUDE_FILE, FIXTURES / "codex_rollout.jsonl")
    assert [r.lines for r in reports] == [0, 0]
    async with await Reader.open(store) as reader:
        assert {r.id: r.events for r in await reader.sessions()} == before


def split_points(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


async def test_growing_file_adds_only_new_lines(tmp_path: Path) -> None:
    """Appended in pieces (one cut inside a line), imported after each: the same events as one
    import of the whole file."""
    lines = split_points(CLAUDE_FILE)
    grow = tmp_path / "grow.jsonl"
    whole_store, grow_store = tmp_path / "whole.db", tmp_path / "grow.db"
    shutil.copy(CLAUDE_FILE, tmp_path / "whole.jsonl")
    await imported(whole_store, tmp_path / "whole.jsonl")
    grow.write_bytes(b"")
    pieces = [
        b"".join(lines[0:5]),
        b"".join(lines[5:11]),
        b"".join(lines[11:20]) + lines[20][:25],  # ends inside a line: that line waits
        lines[20][25:] + b"".join(lines[21:33]),
        b"".join(lines[33:]),
    ]
    for i, piece in enumerate(pieces):
        with open(grow, "ab") as f:
            f.write(piece)
        report = (await imported(grow_store, grow))[0]
        assert report.waiting == (i == 2)

    def strip(evs: list[Event]) -> list[tuple[Any, ...]]:
        return [(e.kind, e.role, e.tool, e.rid, e.rkind, e.points_to, e.text, e.shown_chars,
                 e.seen_chars) for e in evs]  # fmt: skip

    a = strip(await events_of(whole_store, SID))
    b_sid = (await imported(grow_store, grow))[0].session
    b = strip(await events_of(grow_store, b_sid))
    assert a == b


async def test_restart_resumes_without_duplicates(tmp_path: Path) -> None:
    """A follower stops halfway (its importer is dropped), a new one carries on from the stored
    byte offset: the pending tool call of the first half pairs with its result in the second."""
    lines = split_points(CLAUDE_FILE)
    src = tmp_path / "live.jsonl"
    src.write_bytes(b"".join(lines[:12]))  # ends after msg_B's tool_use, before its result
    store = tmp_path / "s.db"
    writer = await Writer.open(store)
    try:
        first = FileImporter(writer, src)
        r1 = await first.step(live=True)
        info = await writer.session_info(r1.session)
        state = json.loads(info["data"])["import"]
        assert state["offset"] == len(b"".join(lines[:12])) and state["line"] == 12
        assert "t2" in state["parser"]["pending"]
        with open(src, "ab") as f:
            f.write(b"".join(lines[12:]))
        second = FileImporter(writer, src)  # as after a restart
        r2 = await second.step(live=True)
        assert r2.lines == len(lines) - 12
        assert (await second.step(live=True)).lines == 0
    finally:
        await writer.close()
    evs = await events_of(store, SID)
    res = results(evs)
    assert len(res) == 13 and len({e.rid for e in res}) == 13
    assert res[1].call_ref == "t2" and res[1].rkind == "unchanged"


async def test_truncation_and_replacement_are_noticed(tmp_path: Path) -> None:
    lines = split_points(FIXTURES / "codex_rollout.jsonl")
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(b"".join(lines))
    store = tmp_path / "s.db"
    writer = await Writer.open(store)
    try:
        imp = FileImporter(writer, src)
        await imp.step(live=True)
        src.write_bytes(b"".join(lines[:10]))  # truncated
        report = await imp.step(live=True)
        assert report.replaced and report.lines == 10
        # Replaced by another file of the same length and head: read again only if bytes differ.
        other = tmp_path / "other.jsonl"
        other.write_bytes(b"".join(lines[:10]))
        other.replace(src)
        assert not (await imp.step(live=True)).replaced
        edited = b"".join(lines[:10]).replace(b"Fix the bug", b"Fix the BUG")
        src.write_bytes(edited)
        assert (await imp.step(live=True)).replaced
    finally:
        await writer.close()
    evs = await events_of(store, "cx-019a0000-0000-7000-8000-000000000001")
    notes = [e for e in evs if e.extra.get("subtype") == "source_replaced"]
    assert len(notes) == 2


# Finding transcripts, and the progress bar


def test_newest_is_of_any_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ctxview follow` with no path: the newest session file of any agent where it keeps
    them; sub-agents' files passed over; OpenCode's database by its write-ahead log too."""
    import os

    from ctxview.importers.find import newest

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "no-claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / "no-codex"))
    assert newest() is None
    chats = home / ".gemini" / "tmp" / ("ab" * 32) / "chats"
    files = [chats / "session-2026-05-01T10-00-5e551011.jsonl",
             home / ".pi" / "agent" / "sessions" / "--proj--" / "2026-05-01T10-00-00_x.jsonl",
             home / ".copilot" / "session-state" / "c0" / "events.jsonl",
             home / ".cursor" / "projects" / "proj" / "agent-transcripts" / "u1" / "u1.jsonl",
             home / ".cursor" / "projects" / "proj" / "agent-transcripts" / "old.jsonl",
             home / "data" / "opencode" / "opencode.db"]  # fmt: skip
    sub_agents = [chats / "5e551011-aaaa" / "agent.jsonl",
                  files[3].parent / "subagents" / "s1.jsonl"]  # fmt: skip
    for f in files + sub_agents:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("{}\n")
        os.utime(f, (1_000_000, 1_000_000))
    for n, f in enumerate(files, 1):
        os.utime(f, (2_000_000 + n, 2_000_000 + n))
        assert newest() == f, f
        for agent in sub_agents:
            os.utime(agent, (3_000_000 + n, 3_000_000 + n))
        assert newest() == f  # a sub-agent's file newer still: its session is followed
    cursor = files[3]
    os.utime(cursor, (4_000_000, 4_000_000))
    assert newest() == cursor
    wal = files[-1].with_name("opencode.db-wal")  # OpenCode writes there until a checkpoint
    wal.write_text("")
    os.utime(wal, (5_000_000, 5_000_000))
    assert newest() == files[-1]


def test_newest_and_folder_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from ctxview.importers.find import newest, transcripts

    claude = tmp_path / "claude" / "projects" / "-home-dev-proj"
    codex = tmp_path / "codex" / "sessions" / "2026" / "01" / "02"
    claude.mkdir(parents=True)
    codex.mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert newest() is None
    old = claude / "agent-abc.jsonl"
    main = claude / "s1.jsonl"
    roll = codex / "rollout-2026-01-02T10-00-00-x.jsonl"
    for i, f in enumerate((old, main, roll)):
        f.write_text("{}\n")
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
    assert newest() == roll
    os.utime(main, (2_000_000, 2_000_000))
    assert newest() == main
    os.utime(old, (3_000_000, 3_000_000))
    assert newest() == main  # a sub-agent file is not a session to follow
    given, found = transcripts([tmp_path / "claude"])
    assert given == [] and found == [main, old]  # a parent before its sub-agents


def test_cli_progress_bar(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "ctxview.cli", "import", "--progress", "--store",
         str(tmp_path / "s.db"), str(FIXTURES / "project")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "2/2 files" in run.stderr and "MB" in run.stderr
    assert "from 2 files into 2 sessions" in run.stdout
    quiet = subprocess.run(
        [sys.executable, "-m", "ctxview.cli", "import", "--store", str(tmp_path / "t.db"),
         str(FIXTURES / "codex_legacy.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert quiet.returncode == 0 and quiet.stderr == ""  # stderr is not a terminal: no bar


async def test_codex_exec_command_header_is_not_the_result(tmp_path: Path) -> None:
    """Newer Codex builds wrap output in `Chunk ID`/`Wall time`/... lines: the wall time differs
    every run, so it is left out and the same search twice is a same-result stub."""

    def line(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps(
            {"timestamp": "2026-06-01T10:00:00.000Z", "type": kind, "payload": payload}
        )

    rows = [line("session_meta", {"id": "019e0000-0000-7000-8000-00000000000e", "cwd": "/w",
                                  "cli_version": "0.135.0"})]  # fmt: skip
    for i, wall in enumerate(("0.0512", "0.0731")):
        rows.append(line("response_item", {"type": "function_call", "name": "exec_command",
                                           "arguments": json.dumps({"cmd": "rg -n TODO"}),
                                           "call_id": f"e{i}"}))  # fmt: skip
        rows.append(line("response_item", {"type": "function_call_output", "call_id": f"e{i}",
                                           "output": f"Chunk ID: {i}\nWall time: {wall} seconds\n"
                                           "Process exited with code 0\nOriginal token count: 4\n"
                                           "Output:\na.py:1:TODO\n"}))  # fmt: skip
    src = tmp_path / "rollout.jsonl"
    src.write_text("\n".join(rows) + "\n")
    store = tmp_path / "s.db"
    [report] = await imported(store, src)
    res = results(await events_of(store, report.session))
    assert [(r.tool, r.rkind) for r in res] == [("grep", "full"), ("grep", "same")]
    assert await shown(store, report.session, res[0].rid) == f"[#{res[0].rid:x}]\na.py:1:TODO\n"


async def test_hostile_lines_never_stop_an_import(tmp_path: Path) -> None:
    """Invalid UTF-8, absurd nesting, a JSON array, CRLF line ends, blank lines: each bad line is
    a reported problem, the good ones around it are imported."""
    good = CLAUDE_FILE.read_bytes().splitlines(keepends=True)[:11]
    bad = [b"\xff\xfe not utf-8\n", b"[" * 100_000 + b"]" * 100_000 + b"\n", b"[1, 2]\n", b"\n"]
    src = tmp_path / "hostile.jsonl"
    src.write_bytes(
        good[0] + b"".join(bad) + b"".join(line.replace(b"\n", b"\r\n") for line in good[1:])
    )
    [report] = await imported(tmp_path / "s.db", src)
    assert [p.line for p in report.problems] == [2, 3, 4]
    assert len(results(await events_of(tmp_path / "s.db", SID))) == 1


async def test_codex_reads_by_nl_sed_head(tmp_path: Path) -> None:
    """`nl -ba F | sed -n 'a,bp'`, `head -n N F` and `sed -n` are reads: a range inside an
    earlier one of the same file is an unchanged stub; numbers from `nl` are not content."""

    def line(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps(
            {"timestamp": "2026-06-01T10:00:00.000Z", "type": kind, "payload": payload}
        )

    body = [f"line {i}" for i in range(1, 31)]
    calls = [
        (
            "nl -ba app.py | sed -n '1,30p'",
            "".join(f"{i:6d}\t{t}\n" for i, t in enumerate(body, 1)),
        ),
        ("sed -n '5,9p' app.py", "".join(t + "\n" for t in body[4:9])),
        ("head -n 3 app.py", "".join(t + "\n" for t in body[:3])),
    ]
    rows = [line("session_meta", {"id": "019e0000-0000-7000-8000-00000000000f", "cwd": "/w"})]
    for i, (cmd, out) in enumerate(calls):
        rows.append(line("response_item", {"type": "function_call", "name": "exec_command",
                                           "arguments": json.dumps({"cmd": cmd}),
                                           "call_id": f"r{i}"}))  # fmt: skip
        rows.append(line("response_item", {"type": "function_call_output", "call_id": f"r{i}",
                                           "output": f"Exit code: 0\nWall time: 0.01 seconds\n"
                                           f"Output:\n{out}"}))  # fmt: skip
    src = tmp_path / "rollout.jsonl"
    src.write_text("\n".join(rows) + "\n")
    store = tmp_path / "s.db"
    [report] = await imported(store, src)
    res = results(await events_of(store, report.session))
    assert [(r.tool, r.rkind, r.line_from, r.line_to) for r in res] == [
        ("read", "full", 1, 30), ("read", "unchanged", 5, 9), ("read", "unchanged", 1, 3),
    ]  # fmt: skip
    assert (await shown(store, report.session, res[0].rid)).split("\n")[1] == "1: line 1"
