"""Reliability of the engine and its store: killed writers, odd bytes, permissions, many writers.

The forms for bytes that are not UTF-8 text (what these tests pin):
- a read of a binary file (a NUL byte in its first 8 KiB) answers
  `[#id PATH binary sha XXXXXXXX] Binary file, N bytes; not shown.`, rkind `binary`, the sha of
  the bytes, nothing of the content shown or stored;
- a read of a file that is not UTF-8 (Latin-1, say) shows its lines with U+FFFD for each byte
  that does not decode; the sha is still that of the bytes;
- a command's output (bash) is decoded the same way, U+FFFD for undecodable bytes;
- edit, multiedit and apply_patch refuse a file that is not UTF-8 with the error result
  `PATH is not UTF-8 text, so it cannot be edited.` and leave it as it was; write replaces it;
- text handed to `insert` or `message` that is not valid Unicode (a lone surrogate, as a JSON
  escape can carry) is stored with U+FFFD in its place instead of failing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxview.engine.session import Session
from ctxview.rules.lines import decode, split_lines, window_lines
from ctxview.store import Reader, Writer

ROOT = Path(__file__).resolve().parent.parent

# What the writer inserts as its i-th output: mostly small, every 7th over the cap (stored in
# full, shown capped), every 50th 300 KB, every 60th 9 MB (written in pieces, see BIG_CHARS).
OUTPUT_SOURCE = r"""
def output(tag, i):
    size = (9_000_000 if i % 60 == 59 else 300_000 if i % 50 == 49 else 60_000 if i % 7 == 6
            else 40 + i % 300)
    line = f"{tag} line {i} " + "ab" * 20 + "\n"
    return (f"{tag}:{i}\n" + line * (size // len(line) + 1))[:size]
"""
_namespace: dict[str, Any] = {}
exec(OUTPUT_SOURCE, _namespace)
expected_output = _namespace["output"]

# A writer loop in its own process: every result it prints has been committed (insert returns
# after COMMIT), so the parent can hold the store to it after a SIGKILL.
WRITER_LOOP = (
    OUTPUT_SOURCE
    + r"""
import asyncio, sys
from pathlib import Path
from ctxview.engine.session import Session
from ctxview.store import Writer


async def main(store, workspace, session_id, tag, count):
    writer = await Writer.open(store)
    try:
        session = await Session.resume(writer, session_id)
    except Exception:
        session = await Session.start(writer, workspace, session_id=session_id)
    i = 0
    while count < 0 or i < count:
        if i % 10 == 3:
            await session.run("read", {"path": "notes.txt"})
            kind = "read"
        elif i % 10 == 8:
            await session.message("assistant", f"{tag} message {i}")
            i += 1
            continue
        else:
            await session.insert("bash", {"command": f"step {i}"}, output(tag, i))
            kind = "insert"
        print(session.last.rid, tag, i, kind, flush=True)
        i += 1
    await writer.close()

store, workspace, session_id, tag, count = sys.argv[1:6]
asyncio.run(main(store, workspace, session_id, tag, int(count)))
"""
)


def spawn(script: Path, store: Path, ws: Path, sid: str, tag: str, count: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(script), str(store), str(ws), sid, tag, str(count)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # this tree's engine, whatever is installed
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def committed_lines(stdout: str) -> list[tuple[int, str, int, str]]:
    """The complete lines the child printed (a kill may cut the last one short)."""
    out = []
    for line in stdout.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        rid, tag, i, kind = line.split()
        out.append((int(rid), tag, int(i), kind))
    return out


def check_store(store: Path) -> None:
    # Closed here, not left to the garbage collector: a sqlite3 connection sits in a reference
    # cycle, so going out of scope does not close it, and one still open across the next kill
    # keeps the killed writer's -shm in use, so the next open skips SQLite's recovery.
    with contextlib.closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # A result and its body are one transaction: neither is ever there without the other.
        orphans = conn.execute(
            "SELECT count(*) FROM events e WHERE e.kind = 'result' AND NOT EXISTS "
            "(SELECT 1 FROM bodies b WHERE b.session = e.session AND b.rid = e.rid)"
        ).fetchone()[0]
        assert orphans == 0
        bodies_without_event = conn.execute(
            "SELECT count(*) FROM bodies b WHERE NOT EXISTS "
            "(SELECT 1 FROM events e WHERE e.session = b.session AND e.rid = b.rid)"
        ).fetchone()[0]
        assert bodies_without_event == 0


def kill_after(proc: subprocess.Popen, lines: int, then: float) -> tuple[str, str]:
    """SIGKILL `proc` `then` seconds after it has printed `lines` lines (or has ended); its
    stdout and stderr. A thread reads its stdout meanwhile, so the wait is bounded."""
    assert proc.stdout is not None and proc.stderr is not None
    out: list[str] = []
    reading = threading.Thread(target=lambda: out.extend(iter(proc.stdout.readline, "")))
    reading.start()
    deadline = time.monotonic() + 120  # only a hang takes this long
    while len(out) < lines and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(then)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    reading.join(timeout=30)
    return "".join(out), proc.stderr.read()


def _has_tables(store: Path) -> bool:
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        return bool(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0)


def open_here(store: Path) -> list[str]:
    """The files of the store (itself, -wal, -shm) this process has open."""
    names = {str(store), f"{store}-wal", f"{store}-shm"}
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
        if target in names:
            found.append(target)
    return found


async def test_sigkill_while_inserting_loses_nothing_committed(tmp_path: Path) -> None:
    script = tmp_path / "writer_loop.py"
    script.write_text(WRITER_LOOP)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("".join(f"note {n}\n" for n in range(120)))
    store = tmp_path / "state" / "store.db"
    sid = "killed-session"
    rng = random.Random(20261129)
    reported: list[tuple[int, str, int, str]] = []
    kills = 0
    for round_no in range(14):
        # Every check below opens the store afresh after the kill, as a person's next command
        # would: SQLite recovers the killed writer's WAL only when nobody has it open.
        assert not open_here(store), "the checks must close the store before the next writer"
        proc = spawn(script, store, ws, sid, f"r{round_no}", -1)
        # Some rounds are killed just after the start (the store may be mid-creation), the others
        # once the child has committed a drawn number of results (up to the 300 KB and 9 MB
        # ones), a moment into the next: timed by its progress, not the clock, so an idle machine
        # and a loaded one kill at the same points of the loop.
        early = rng.random() < 0.3
        stdout, stderr = kill_after(
            proc,
            0 if early else rng.randint(1, 60),
            rng.uniform(0.0, 0.3) if early else rng.uniform(0.0, 0.05),
        )
        assert proc.returncode in (-signal.SIGKILL, 0), stderr
        kills += proc.returncode == -signal.SIGKILL
        lines = committed_lines(stdout)
        rids = [r[0] for r in lines]
        assert rids == sorted(set(rids)), "ids within one run grow"
        if reported and rids:
            assert rids[0] > max(r[0] for r in reported), "a resumed session never reuses an id"
        reported += lines

        # The store opens, passes the schema check and SQLite's own check after every kill.
        if not store.exists() or not _has_tables(store):
            continue  # killed before the schema was made: a read refuses it, nothing committed
        check_store(store)
        async with await Reader.open(store) as reader:
            if await reader.session(sid) is None:
                assert not reported
                continue
            for rid, tag, i, kind in lines:
                event = await reader.result(sid, rid)
                assert event is not None, f"committed #{rid:x} is missing"
                body = await reader.body(sid, rid)
                assert body is not None
                if kind == "insert":
                    assert body.stored == expected_output(tag, i)
                    assert event.stored_chars == len(body.stored)
                else:
                    assert body.stored.startswith("1: note 0\n")
    assert kills >= 10, "the loop must really kill the writer"
    assert len(reported) > 50, "the writer must have committed results before the kills"
    all_rids = [r[0] for r in reported]
    assert len(all_rids) == len(set(all_rids))
    async with await Reader.open(store) as reader:
        row = await reader.session(sid)
        assert row is not None and row.next_rid > max(all_rids)
        stored = await reader.events(sid)
    stored_rids = [e.rid for e in stored if e.rid is not None]
    assert len(stored_rids) == len(set(stored_rids))
    assert set(all_rids) <= set(stored_rids)


async def test_several_processes_write_one_store(tmp_path: Path) -> None:
    script = tmp_path / "writer_loop.py"
    script.write_text(WRITER_LOOP)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("a\nb\n")
    store = tmp_path / "shared" / "store.db"
    # Both start at once on a store that does not exist yet: creation races too.
    procs = [spawn(script, store, ws, f"writer-{n}", f"w{n}", 200) for n in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "locked" not in err and "busy" not in err.lower()
    check_store(store)
    async with await Reader.open(store) as reader:
        for n, (out, _) in enumerate(outs):
            lines = committed_lines(out)
            assert len(lines) == 180  # 200 steps, every tenth a message
            for rid, tag, i, kind in lines:
                body = await reader.body(f"writer-{n}", rid)
                assert body is not None
                if kind == "insert":
                    assert body.stored == expected_output(tag, i)
            events = await reader.events(f"writer-{n}")
            kinds = [e.kind for e in events]
            assert kinds.count("result") == kinds.count("call") == 180
            assert kinds.count("message") == 20
            assert [e.seq for e in events] == list(range(1, len(events) + 1))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o000])
async def test_store_created_private(tmp_path: Path, umask: int) -> None:
    store = tmp_path / "home" / "state" / "ctxview" / "store.db"
    old = os.umask(umask)
    try:
        async with await Writer.open(store) as writer:
            session = await Session.start(writer, tmp_path)
            await session.insert("bash", {"command": "x"}, "secret output")
            assert _mode(store) == 0o600
            assert _mode(store.parent) == 0o700
            # SQLite gives the WAL and shared-memory files the main file's mode.
            for extra in ("-wal", "-shm"):
                side = store.with_name(store.name + extra)
                if side.exists():
                    assert _mode(side) == 0o600
    finally:
        os.umask(old)
    assert _mode(store) == 0o600


# Binary and non-UTF-8 input


@pytest.fixture
async def session(tmp_path: Path):  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    writer = await Writer.open(tmp_path / "store" / "store.db")
    yield await Session.start(writer, ws)
    await writer.close()


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06" + bytes(
    range(256)
)
LATIN1 = "café au lait\nnaïve\n".encode("latin-1")


async def stored(session: Session, rid: int) -> str:
    text = await session.writer.stored_text(session.id, rid)
    assert text is not None
    return text


async def test_read_binary_file(session: Session) -> None:
    (session.workspace.root / "logo.png").write_bytes(PNG)
    shown = await session.run("read", {"path": "logo.png"})
    sha = hashlib.sha256(PNG).hexdigest()
    assert (
        shown == f"[#1000 logo.png binary sha {sha[:8]}] Binary file, {len(PNG)} bytes; not shown."
    )
    assert session.last is not None and session.last.rkind == "binary"
    assert session.last.sha == sha
    assert await stored(session, 0x1000) == f"Binary file, {len(PNG)} bytes; not shown."
    # Recall gives back what was stored, the sentence; never the bytes.
    recalled = await session.run("recall", {"id": "1000"})
    assert recalled.endswith("Binary file, 276 bytes; not shown.".replace("276", str(len(PNG))))


async def test_read_latin1_file(session: Session) -> None:
    (session.workspace.root / "latin.txt").write_bytes(LATIN1)
    shown = await session.run("read", {"path": "latin.txt"})
    sha = hashlib.sha256(LATIN1).hexdigest()
    assert (
        shown
        == f"[#1000 latin.txt lines 1-2 of 2 sha {sha[:8]}]\n1: caf\ufffd au lait\n2: na\ufffdve"
    )
    assert session.last is not None and session.last.sha == sha
    # Read again unchanged: the usual stub, the bytes' hash decides.
    again = await session.run("read", {"path": "latin.txt"})
    assert "Unchanged since #1000" in again


async def test_bash_invalid_utf8_output(session: Session) -> None:
    shown = await session.run("bash", {"command": r"printf 'ok \xff\xfe end\n'; printf '\x00\x01'"})
    assert shown.startswith("[#1000]\nok \ufffd\ufffd end\n")
    assert "\x00\x01" in await stored(session, 0x1000)


async def test_edit_tools_refuse_non_utf8_file(session: Session) -> None:
    path = session.workspace.root / "latin.txt"
    path.write_bytes(LATIN1)
    sentence = "latin.txt is not UTF-8 text, so it cannot be edited."
    shown = await session.run(
        "edit", {"path": "latin.txt", "old_string": "caf", "new_string": "CAF"}
    )
    assert shown == f"[#1000] {sentence}"
    assert session.last is not None and session.last.rkind == "error"
    shown = await session.run(
        "multiedit", {"path": "latin.txt", "edits": [{"old_string": "caf", "new_string": "X"}]}
    )
    assert shown == f"[#1001] {sentence}"
    patch = "*** Begin Patch\n*** Update File: latin.txt\n@@\n-na\ufffdve\n+naive\n*** End Patch"
    shown = await session.run("apply_patch", {"patch": patch})
    assert shown == f"[#1002] {sentence}"
    assert path.read_bytes() == LATIN1, "a refused edit leaves the file as it was"
    # write replaces the whole file, so it may: the old bytes are only shown in the diff.
    shown = await session.run("write", {"path": "latin.txt", "content": "café\n"})
    assert session.last is not None and session.last.rkind == "edit"
    assert path.read_text(encoding="utf-8") == "café\n"


async def test_lone_surrogates_are_stored_as_replacement(session: Session) -> None:
    await session.insert("bash", {"command": "echo \ud800"}, "bad \ud800 text")
    await session.message("user", "hi \udcff")
    assert await stored(session, 0x1000) == "bad \ufffd text"
    async with await Reader.open(session.writer.path) as reader:
        events = await reader.events(session.id)
    assert json.loads(events[0].args or "{}") == {"command": "echo \ufffd"}
    assert events[-1].text == "hi \ufffd"
    # The session carries on; the next id is the next one.
    assert (await session.insert("bash", {}, "fine")).startswith("[#1001]")


# Bodies too big to bind are written in pieces (src/ctxview/store/writer.py BIG_CHARS)


@pytest.mark.parametrize("kind", ["ascii", "non-ascii", "surrogate"])
async def test_big_body_written_in_pieces_reads_back_the_same(session: Session, kind: str) -> None:
    from ctxview.store.writer import BIG_CHARS, PIECE_CHARS

    line = {"ascii": "plain line of text\n", "non-ascii": "café ünïcödé 😀 ✓\n",
            "surrogate": "plain line\n"}[kind]  # fmt: skip
    output = "needle_word first line\n" + line * (BIG_CHARS // len(line) + 10)
    if kind == "surrogate":  # one lone surrogate past the first piece
        at = PIECE_CHARS + 5
        output = output[:at] + "\ud800" + output[at + 1 :]
    assert len(output) > BIG_CHARS
    await session.insert("bash", {"command": "big"}, output)
    expected = output.replace("\ud800", "\ufffd")
    assert await stored(session, 0x1000) == expected
    async with await Reader.open(session.writer.path) as reader:
        body = await reader.body(session.id, 0x1000)
        assert body is not None and body.stored == expected
        assert (await reader.bodies(session.id, [0x1000]))[0x1000].stored == expected
        event = await reader.result(session.id, 0x1000)
        assert event is not None and event.stored_chars == len(output) and event.capped
        assert await reader.search(session.id, "needle_word") == [0x1000]
    recalled = await session.run("recall", {"id": "1000", "offset": 2, "limit": 1})
    assert recalled.endswith("\n" + line.rstrip("\n").replace("\ud800", "\ufffd"))


# A read decodes only its window (rules/lines.py window_lines)

_PIECES = [
    b"a",
    b"\n",
    b"\r",
    b"\r\n",
    b"\xc3\xa9",
    b"\xe2\x82",
    b"\xff",
    b"\xf0\x9f\x98\x80",
    b"xyz",
]


@given(
    st.lists(st.sampled_from(_PIECES), max_size=60).map(b"".join),
    st.integers(1, 30),
    st.integers(1, 30),
)
def test_window_lines_is_split_then_sliced(data: bytes, first: int, limit: int) -> None:
    lines = split_lines(decode(data))
    window, total = window_lines(data, first, limit)
    assert total == len(lines)
    assert window == lines[first - 1 : first - 1 + limit]


async def test_read_in_a_large_non_utf8_file(session: Session) -> None:
    # 3 MB: the window search crosses many 64 KiB blocks; every line has an undecodable byte.
    data = b"".join(b"row %d caf\xe9 \r\n" % n for n in range(200_000))
    (session.workspace.root / "big.log").write_bytes(data)
    shown = await session.run("read", {"path": "big.log", "offset": 150_001, "limit": 3})
    head, *rows = shown.split("\n")
    assert head.startswith("[#1000 big.log lines 150001-150003 of 200000 sha ")
    assert rows == [f"{n + 1}: row {n} caf\ufffd " for n in range(150_000, 150_003)]
    past = await session.run("read", {"path": "big.log", "offset": 200_001})
    assert past == "[#1001] Offset 200001 is past the end of big.log, which has 200000 lines."
