"""Two Gemini CLI 0.61 chat files of one session in a project's `chats/` folder
(importers/gemini_files.py), shaped as Gemini writes them: one session `gm-<id>`, nothing
twice, in either order; a copy elsewhere still refused, or a session of its own."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from ctxview.cli import main
from ctxview.engine.session import Session
from ctxview.importers.formats import GEMINI
from ctxview.store import Reader, Writer

SID = "7a1b2c3d-1111-4222-8333-444455556666"
CONTEXT = {"id": "d04923d38bb0f6017037e74183378ef4", "timestamp": "2026-12-02T10:00:00.000Z",
           "type": "user", "content": [{"text": "<session_context>\nThis is the Gemini CLI."}]}  # fmt: skip


def header(start: str) -> dict[str, Any]:
    return {"sessionId": SID, "projectHash": "ab" * 32, "startTime": start, "lastUpdated": start,
            "kind": "main"}  # fmt: skip


def turn(n: int, minute: int = 0) -> list[dict[str, Any]]:
    """A prompt and its answer (after a read), as Gemini records them: the model's message again
    when its call has finished, each message followed by a `$set` of lastUpdated."""
    ts = f"2026-12-02T10:{minute:02d}:{n % 60:02d}.000Z"
    call = {"id": f"read_file_{n}", "name": "read_file", "args": {"file_path": f"/w/f{n}.txt"},
            "status": "success", "timestamp": ts,
            "result": [{"functionResponse": {"id": f"read_file_{n}", "name": "read_file",
                                             "response": {"output": f"line {n}\n"}}}]}  # fmt: skip
    model = {"id": f"g-{n}", "timestamp": ts, "type": "gemini", "content": "", "thoughts": [],
             "tokens": {"input": 100, "output": 10, "cached": 0}, "model": "gemini-2.5-flash"}  # fmt: skip
    return [{"id": f"u-{n}", "timestamp": ts, "type": "user", "content": [{"text": f"ask {n}"}]},
            {"$set": {"lastUpdated": ts}}, model, {**model, "toolCalls": [call]},
            {"id": f"a-{n}", "timestamp": ts, "type": "gemini", "content": f"said {n}."},
            {"$set": {"lastUpdated": ts}}]  # fmt: skip


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def append(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))


def first_file(chats: Path, turns: range) -> Path:
    """The session's own file: begun at 10:00, its turns appended."""
    records = [header("2026-12-02T10:00:00.000Z"), {"$set": {"messages": [CONTEXT]}}]
    for n in turns:
        records += turn(n)
    return write(chats / "session-2026-12-02T10-00-7a1b2c3d.jsonl", records)


def left_file(chats: Path) -> Path:
    """What a resume at 10:05 leaves (its chat begun before the resume was known): a header and
    the session context, never written again."""
    return write(chats / "session-2026-12-02T10-05-7a1b2c3d.jsonl",
                 [header("2026-12-02T10:05:00.000Z"), {"$set": {"messages": [CONTEXT]}}])  # fmt: skip


def run(store: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--store", str(store), *argv])
    return code, out.getvalue(), err.getvalue()


def stored(store: Path) -> dict[str, tuple[str | None, list[str], int]]:
    """Each session: its source file, its user prompts in order, its results."""

    async def get() -> dict[str, tuple[str | None, list[str], int]]:
        async with await Reader.open(store) as reader:
            out = {}
            for row in await reader.sessions():
                evs = await reader.events(row.id)
                prompts = [str(e.text) for e in evs if e.kind == "message" and e.role == "user"]
                out[row.id] = (row.source_path, prompts,
                               sum(e.kind == "result" for e in evs))  # fmt: skip
            return out

    return asyncio.run(get())


def hooked(store: Path, source: Path) -> None:
    """The session as ctxview's Gemini hooks begin it (agents/gemini/engine.py): its source the
    hook's transcript_path."""

    async def go() -> None:
        writer = await Writer.open(store)
        try:
            await Session.start(writer, "/w", source=GEMINI, session_id=f"gm-{SID}",
                                started=time.time(), source_path=str(source), source_ref=SID,
                                data=json.dumps({"hooked": True, "host": "gemini"}))  # fmt: skip
        finally:
            await writer.close()

    asyncio.run(go())


def prompts_of(store: Path) -> list[str]:
    [(_, prompts, _)] = stored(store).values()
    return prompts


@pytest.mark.parametrize("order", ["first-then-left", "left-then-first", "folder"])
def test_a_resume_in_a_later_minute_is_one_session(tmp_path: Path, order: str) -> None:
    chats = tmp_path / "tmp" / "proj" / "chats"
    first = first_file(chats, range(1, 3))
    left = left_file(chats)
    append(first, [{"$set": {"sessionId": SID}}, {"$set": {"messages": [CONTEXT]}}, *turn(3, 5)])
    store = tmp_path / "s.db"
    paths = {"first-then-left": [first, left], "left-then-first": [left, first],
             "folder": [tmp_path / "tmp"]}[order]  # fmt: skip
    for path in paths:
        code, _, err = run(store, "import", str(path))
        assert code == 0, err
    assert stored(store) == {f"gm-{SID}": (str(first), ["ask 1", "ask 2", "ask 3"], 3)}
    # Again, both: nothing new.
    for path in (left, first):
        assert run(store, "import", str(path))[0] == 0
    assert prompts_of(store) == ["ask 1", "ask 2", "ask 3"]


def test_a_hooked_session_takes_the_left_file_as_a_part(tmp_path: Path) -> None:
    """The hooks named the session's own file; the one a resume left is a part of it (the
    folder's import says no error), a copy of that file elsewhere is refused."""
    chats = tmp_path / "tmp" / "proj" / "chats"
    first = first_file(chats, range(1, 3))
    store = tmp_path / "s.db"
    hooked(store, first)
    left = left_file(chats)
    code, out, err = run(store, "import", str(tmp_path / "tmp"))
    assert code == 0, err
    assert "into 1 session" in out, out
    [(source, _, results)] = stored(store).values()
    assert source == str(first) and results == 2
    elsewhere = tmp_path / "elsewhere" / first.name
    elsewhere.parent.mkdir()
    shutil.copy(first, elsewhere)
    code, _, err = run(store, "import", str(elsewhere))
    assert code == 1 and f"is a copy of the session gm-{SID}" in err, err
    assert run(store, "import", str(left))[0] == 0
    assert prompts_of(store) == ["ask 1", "ask 2"]


def test_a_file_that_goes_on_from_what_is_stored_becomes_the_source(tmp_path: Path) -> None:
    """A file holding the session whole and more (a `.json` document resumed into `.jsonl`):
    only what is new comes in, and the session's source is that file; the older one is then a
    part of it. Past the parser's memory of message ids (512), the older ones are passed over
    too."""
    chats = tmp_path / "tmp" / "proj" / "chats"
    first = first_file(chats, range(1, 301))  # 1,200 messages
    store = tmp_path / "s.db"
    assert run(store, "import", str(first))[0] == 0
    whole = [header("2026-12-02T10:00:00.000Z"), {"$set": {"messages": [CONTEXT]}}]
    for n in range(1, 303):
        whole += turn(n)
    later = write(chats / "session-2026-12-02T11-00-7a1b2c3d.jsonl", whole)
    code, _, err = run(store, "import", str(later))
    assert code == 0, err
    [(source, _, results)] = stored(store).values()
    assert source == str(later) and results == 302
    assert prompts_of(store) == [f"ask {n}" for n in range(1, 303)]
    append(later, turn(303))
    for path in (first, later, tmp_path / "tmp"):
        assert run(store, "import", str(path))[0] == 0
    assert prompts_of(store) == [f"ask {n}" for n in range(1, 304)]
    assert stored(store)[f"gm-{SID}"][0] == str(later)


def test_a_file_that_does_not_go_on_from_what_is_stored_is_another(tmp_path: Path) -> None:
    """Messages of the session id that are not the stored ones and more: refused for a hooked
    session, a session of its own for an imported one."""
    chats = tmp_path / "tmp" / "proj" / "chats"
    first = first_file(chats, range(1, 3))
    other = write(chats / "session-2026-12-02T12-00-7a1b2c3d.jsonl",
                  [header("2026-12-02T12:00:00.000Z"), *turn(7), *turn(8)])  # fmt: skip
    store = tmp_path / "s.db"
    assert run(store, "import", str(first))[0] == 0
    assert run(store, "import", str(other))[0] == 0
    assert sorted(len(p) for _, p, _ in stored(store).values()) == [2, 2]
    hooked_store = tmp_path / "h.db"
    hooked(hooked_store, first)
    assert run(hooked_store, "import", str(first))[0] == 0
    code, _, err = run(hooked_store, "import", str(other))
    assert code == 1 and "is a copy of the session" in err, err


def test_follow_of_the_left_file_holds_nothing_new(tmp_path: Path) -> None:
    """Each step of a follow of the file a resume left asks again, and finds nothing to take."""
    from ctxview.importers.runner import FileImporter

    chats = tmp_path / "tmp" / "proj" / "chats"
    first = first_file(chats, range(1, 3))
    left = left_file(chats)
    store = tmp_path / "s.db"
    assert run(store, "import", str(first))[0] == 0

    async def steps() -> None:
        writer = await Writer.open(store)
        try:
            importer = FileImporter(writer, left)
            for _ in range(2):
                report = await importer.step(live=True)
                assert report.session == f"gm-{SID}" and report.lines == 0
        finally:
            await writer.close()

    asyncio.run(steps())
    assert prompts_of(store) == ["ask 1", "ask 2"]


@pytest.mark.parametrize("order", ["json-first", "jsonl-first"])
def test_a_json_document_resumed_into_jsonl_is_one_session(tmp_path: Path, order: str) -> None:
    """Resuming a `.json` chat document, Gemini 0.61 writes the session whole into `<name>.jsonl`
    (its header, every message) and goes on there; the `.json` stays as it was."""
    chats = tmp_path / "tmp" / "proj" / "chats"
    messages = [r for n in (1, 2) for r in turn(n) if "type" in r]
    doc = {**header("2026-12-02T10:00:00.000Z"), "messages": messages}
    old = chats / "session-2026-12-02T10-00-7a1b2c3d.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps(doc))
    new = write(old.with_suffix(".jsonl"), [header("2026-12-02T10:00:00.000Z"), *messages,
                                            {"$set": {"sessionId": SID}}, *turn(3, 5)])  # fmt: skip
    store = tmp_path / "s.db"
    for path in [old, new] if order == "json-first" else [new, old]:
        code, _, err = run(store, "import", str(path))
        assert code == 0, err
    for path in (old, new, tmp_path / "tmp"):
        assert run(store, "import", str(path))[0] == 0
    assert stored(store) == {f"gm-{SID}": (str(new), ["ask 1", "ask 2", "ask 3"], 3)}


def test_follow_of_either_file_takes_what_the_session_goes_on_with(tmp_path: Path) -> None:
    """A follow of the file a resume left follows the session's own file with it (its folder's
    files of the same session): what the resumed run appends there comes in, once."""
    from ctxview.importers.follow import follow
    from ctxview.importers.runner import FileReport

    chats = tmp_path / "tmp" / "proj" / "chats"
    first = first_file(chats, range(1, 3))
    left = left_file(chats)
    write(chats / "session-2026-12-02T10-07-7a1b2c3d.jsonl",  # the same short id only: not followed
                  [{**header("2026-12-02T10:07:00.000Z"), "sessionId": "7a1b2c3d-other"},
                   *turn(9)])  # fmt: skip
    store = tmp_path / "s.db"
    assert run(store, "import", str(first))[0] == 0
    append(first, [{"$set": {"sessionId": SID}}, *turn(3, 5)])  # the resumed run

    async def go() -> list[FileReport]:
        writer = await Writer.open(store)
        stop = asyncio.Event()
        batches: list[FileReport] = []
        took: asyncio.Queue[FileReport] = asyncio.Queue()
        task = asyncio.create_task(follow(writer, left, on_batch=took.put_nowait, stop=stop))
        try:
            while "ask 3" not in prompts_of_now(store):
                batches.append(await asyncio.wait_for(took.get(), 60))
        finally:
            stop.set()
            await task
            await writer.close()
        return batches

    batches = asyncio.run(go())
    assert {b.path for b in batches} == {str(first)}, batches
    assert stored(store) == {f"gm-{SID}": (str(first), ["ask 1", "ask 2", "ask 3"], 3)}


def prompts_of_now(store: Path) -> list[str]:
    """The prompts stored (from inside a running event loop: sqlite3 directly)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(store)) as db:
        return [r[0] for r in db.execute(
            "SELECT text FROM events WHERE kind = 'message' AND role = 'user' ORDER BY seq")]  # fmt: skip
