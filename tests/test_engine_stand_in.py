"""Two hash schemes in one session: the engine's reads hash the file's own bytes, the import's
replay of a transcript a stand-in (path, generation, length). In a hooked session the replay
stores the calls the host missed, which the model got whole from the agent: such a read is
stored in full, is no stub and stubs nothing, gives no files-read row and no hash for the
"changed outside" note, and its key is the engine's key for the file. Real store, real files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from engine_helpers import workspace_and_writer

from ctxview.engine.session import Session
from ctxview.importers.replay import Replay
from ctxview.store.writer import Writer

A = "x = 1\ny = 2\nz = 3\nw = 4\n"
LINES = A.splitlines()
OWN = hashlib.sha256(A.encode()).hexdigest()


async def _hooked(ws: Path, writer: Writer) -> tuple[Session, Replay]:
    session = await Session.start(writer, ws, session_id="pi-1", source="pi",
                                  data=json.dumps({"hooked": True}))  # fmt: skip
    return session, Replay(session, str(ws), {"hooked": True})


async def _missed_read(replay: Replay, ws: Path, ref: str) -> str:
    path = str(ws / "a.py")
    return await replay.read({"path": path}, path, 1, LINES, 4, call_ref=ref, seen=len(A), ts=1.0)


async def test_two_missed_reads_are_both_full_and_give_no_row(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {"a.py": A}) as (ws, writer):
        session, replay = await _hooked(ws, writer)
        own = await session.run("read", {"path": "a.py"})
        assert own.startswith(f"[#1000 a.py lines 1-4 of 4 sha {OWN[:8]}]")
        missed = [await _missed_read(replay, ws, f"m{i}") for i in range(2)]
        for rid, text in zip(("#1001", "#1002"), missed, strict=True):
            assert text.startswith(f"[{rid} {ws / 'a.py'} lines 1-4 of 4 sha "), text
            assert "Unchanged" not in text and text.endswith("4: w = 4"), text
        # The table after a compaction: the file's own hash, from the read the engine saw.
        assert _rows(session) == [("a.py", OWN, 0x1000)]
        again = await Session.resume(writer, session.id)  # the same, rebuilt from the store
        assert _rows(again) == [("a.py", OWN, 0x1000)]
        # A live re-read is judged against the engine's own read.
        assert "Unchanged since #1000" in await session.run("read", {"path": "a.py"})


async def test_a_missed_read_alone_gives_no_row(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {"a.py": A}) as (ws, writer):
        session, replay = await _hooked(ws, writer)
        await _missed_read(replay, ws, "m1")
        assert _rows(session) == []
        assert (await session.run("read", {"path": "a.py"})).endswith("4: w = 4")  # no stub


async def test_the_replays_key_is_the_engines(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {"a.py": A}) as (ws, writer):
        session, replay = await _hooked(ws, writer)
        assert replay.key(str(ws / "a.py")) == replay.key("a.py") == "a.py"
        assert replay.key("/elsewhere/../b.py") == "/b.py"
        await session.run("read", {"path": "a.py"})
        await _missed_read(replay, ws, "m1")
        # A missed edit, then the engine's: the file changed in this session, not outside it.
        new = A.replace("y = 2", "y = 20")
        (ws / "a.py").write_text(new)
        await replay.edit("edit", {"path": str(ws / "a.py")}, [(str(ws / "a.py"), A, new)],
                          call_ref="m2", seen=10, ts=2.0)  # fmt: skip
        edited = await session.run("edit", {"path": "a.py", "old_string": "z = 3",
                                            "new_string": "z = 30"})  # fmt: skip
        assert "changed outside" not in edited, edited


async def test_a_missed_read_gives_no_hash_for_the_changed_outside_note(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {"a.py": A}) as (ws, writer):
        session, replay = await _hooked(ws, writer)
        await session.run("read", {"path": "a.py"})
        await _missed_read(replay, ws, "m1")
        edited = await session.run("edit", {"path": "a.py", "old_string": "z = 3",
                                            "new_string": "z = 30"})  # fmt: skip
        assert "changed outside" not in edited, edited


async def test_an_import_alone_still_gives_the_unchanged_stub(tmp_path: Path) -> None:
    """Not hooked: the replay says what 3.0.0 would have shown, stand-ins compared as before."""
    async with workspace_and_writer(tmp_path, {"a.py": A}) as (ws, writer):
        session = await Session.start(writer, ws, session_id="imp", source="pi")
        replay = Replay(session, str(ws), {})
        first, second = [await _missed_read(replay, ws, f"m{i}") for i in range(2)]
        assert first.endswith("4: w = 4")
        assert "Unchanged since #1000" in second, second
        ((path, _, rid),) = _rows(session)
        assert (path, rid) == (str(ws / "a.py"), 0x1000)


def _rows(session: Session) -> list[tuple[str, str, int]]:
    return [(r.shown_path, r.sha, r.rid)
            for r in session.dedupe.newest_reads(session.config["compaction.rows"])]  # fmt: skip


async def test_a_host_answering_through_the_replay_still_gives_the_stub(tmp_path: Path) -> None:
    """Gemini's engine answers its hooked calls through a replay (`live=True`): the model got
    the rules' text, so a second read of the same file is the stub."""
    async with workspace_and_writer(tmp_path, {"a.py": A}) as (ws, writer):
        session, _ = await _hooked(ws, writer)
        replay = Replay(session, str(ws), {"hooked": True}, live=True)
        first, second = [await _missed_read(replay, ws, f"m{i}") for i in range(2)]
        assert first.endswith("4: w = 4")
        assert "Unchanged since #1000" in second, second


async def test_two_missed_searches_are_both_full(tmp_path: Path) -> None:
    """The same search twice, both missed by the host: the model got each whole, so neither is
    the same-result stub, and a live search after them is compared with none of them."""
    async with workspace_and_writer(tmp_path, {"a.py": A}) as (ws, writer):
        session, replay = await _hooked(ws, writer)
        args = {"pattern": "y", "path": "."}
        missed = [await replay.search("grep", args, "a.py:2:y = 2", call_ref=f"m{i}", seen=12,
                                      ts=1.0) for i in range(2)]  # fmt: skip
        for rid, text in zip(("#1000", "#1001"), missed, strict=True):
            assert text.startswith(f"[{rid}]") and text.endswith("a.py:2:y = 2"), text
        live = await session.insert("grep", args, "a.py:2:y = 2")
        assert "Same result" not in live and live.endswith("a.py:2:y = 2"), live
        again = await session.insert("grep", args, "a.py:2:y = 2")
        assert "Same result as #1002" in again, again
