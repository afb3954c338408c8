"""Engine edges that the case format cannot carry: text that is not valid Unicode, a harness's
own edit with a note, and a session resumed after a restart."""

from __future__ import annotations

from pathlib import Path

from engine_helpers import workspace_and_writer

from ctxview.engine.session import Session
from ctxview.store.writer import Writer


async def test_write_of_a_lone_surrogate_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {"a.txt": "keep\n"}) as (ws, writer):
        s = await Session.start(writer, ws)
        for path in ("a.txt", "new.txt"):
            text = await s.run("write", {"path": path, "content": "x\ud800y"})
            assert text.endswith("the new text is not valid Unicode (it holds a lone surrogate).")
        assert (ws / "a.txt").read_text(encoding="utf-8") == "keep\n"
        assert not (ws / "new.txt").exists()


async def test_insert_edit_puts_the_note_after_the_diff(tmp_path: Path) -> None:
    async with await Writer.open(tmp_path / "s.db") as writer:
        s = await Session.start(writer, tmp_path)
        text = await s.insert_edit("edit", {"path": "a"}, [("a", "a", "x\n", "y\n")],
                                   note="Warning: a skill file was written outside skill_manage.")  # fmt: skip
        assert text.split("\n")[1:] == ["@@ -1 +1 @@", "-x", "+y",
                                        "Warning: a skill file was written outside skill_manage."]  # fmt: skip


async def test_resumed_session_keeps_ids_stubs_and_its_own_edits(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {"a.txt": "a\nb\n"}) as (ws, writer):
        s = await Session.start(writer, ws)
        await s.run("read", {"path": "a.txt"})  # #1000
        await s.run("read", {"path": "a.txt", "offset": 2})  # #1001, a stub
        await s.run("edit", {"path": "a.txt", "old_string": "a", "new_string": "A"})  # #1002
        again = await Session.resume(writer, s.id)
        # The session's own edit is no "change from outside" after the restart.
        edit = await again.run("edit", {"path": "a.txt", "old_string": "b", "new_string": "B"})
        assert edit.startswith("[#1003 a.txt sha ") and "changed outside" not in edit
        assert (await again.run("read", {"path": "a.txt"})).endswith("1: A\n2: B")  # #1004
        stub = await again.run("read", {"path": "a.txt"})
        assert stub.startswith("[#1005 a.txt lines 1-2 of 2 sha ")
        assert stub.endswith("Unchanged since #1004, which already shows lines 1-2.")
        (ws / "a.txt").write_text("A\nB\nc\n", encoding="utf-8")
        edit = await again.run("edit", {"path": "a.txt", "old_string": "c", "new_string": "C"})
        assert edit.endswith("Note: a.txt changed outside this session since #1005.")


async def test_a_note_on_a_search_is_kept_and_compared(tmp_path: Path) -> None:
    async with await Writer.open(tmp_path / "s.db") as writer:
        s = await Session.start(writer, tmp_path)
        assert await s.insert("grep", {"p": 1}, "hit", note="Note: 1 file skipped.") == (
            "[#1000]\nhit\nNote: 1 file skipped."
        )
        assert await s.insert("grep", {"p": 1}, "hit", note="Note: 1 file skipped.") == (
            "[#1001] Same result as #1000."
        )
        assert await s.insert("grep", {"p": 1}, "hit") == "[#1002]\nhit"
