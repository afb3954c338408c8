"""Store versions: a newer, foreign or non-SQLite file is refused in one sentence and left as it
was; an older store is migrated forward and keeps its data; a new store is the newest schema."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ctxview.engine.session import Session
from ctxview.store import SCHEMA_VERSION, Reader, StoreError, Writer
from ctxview.store.schema import APPLICATION_ID, RID_TRIGGER, SCHEMA_V1, fts_trigger

ROOT = Path(__file__).resolve().parent.parent


def one_sentence(text: str) -> None:
    assert "\n" not in text
    assert text.endswith(".")
    assert text[0].isupper() or text.startswith("/")
    assert ". " not in text.rstrip("."), f"more than one sentence: {text}"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def refused(path: Path) -> str:
    """The refusal, the same from the writer and the reader."""
    with pytest.raises(StoreError) as from_writer:
        await Writer.open(path)
    with pytest.raises(StoreError) as from_reader:
        await Reader.open(path)
    assert str(from_writer.value) == str(from_reader.value)
    one_sentence(str(from_writer.value))
    return str(from_writer.value)


async def make_store(path: Path, ws: Path) -> str:
    async with await Writer.open(path) as writer:
        session = await Session.start(writer, ws, title="kept")
        await session.insert("bash", {"command": "echo"}, "hello zebra")
        return session.id


def schema_of(path: Path) -> set[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "AND name NOT LIKE 'bodies_fts_%'"
        ).fetchall()
    return {(t, n) for t, n in rows}


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await make_store(store, tmp_path)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    before = digest(store)
    message = await refused(store)
    assert "99" in message and str(SCHEMA_VERSION) in message
    assert message == (
        f"The store was written by a newer ctxview (schema 99; this one reads up to "
        f"{SCHEMA_VERSION}); upgrade ctxview to open it."
    )
    assert digest(store) == before


async def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path: Path) -> None:
    store = tmp_path / "other.db"
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    before = digest(store)
    message = await refused(store)
    assert "not a ctxview store" in message
    assert digest(store) == before  # not even switched to WAL mode
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


async def test_foreign_application_id_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "app.db"
    with sqlite3.connect(store) as conn:
        conn.execute("PRAGMA application_id = 1234")
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    assert "not a ctxview store" in await refused(store)


@pytest.mark.parametrize(
    "content",
    [os.urandom(8192), b"hello, this is a text file\n", b"SQLite format 3\0" + os.urandom(200)],
    ids=["random", "text", "bad-header"],
)
async def test_not_sqlite_is_refused(tmp_path: Path, content: bytes) -> None:
    store = tmp_path / "store.db"
    store.write_bytes(content)
    message = await refused(store)
    assert str(store) in message
    assert store.read_bytes() == content


async def test_schema_version_missing_or_not_a_number(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await make_store(store, tmp_path)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE meta SET value = 'two' WHERE key = 'schema_version'")
    assert "'two' is not a number" in await refused(store)
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM meta")
    assert "no schema version" in await refused(store)


async def test_new_store_is_the_newest_schema(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await make_store(store, tmp_path)
    with sqlite3.connect(store) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        triggers = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
    assert version == (str(SCHEMA_VERSION),)
    assert app_id == APPLICATION_ID
    # Bodies' index is fed by the writer since version 2; events' (small) text by a trigger;
    # since version 7 each request-record row gets its rev (what a push sends past) by trigger.
    revs = {f"{t}_rev_{w}" for t in ("api_requests", "api_costs", "proxy_records")
            for w in ("insert", "update")}  # fmt: skip
    assert triggers == {"events_next_rid", "events_fts_insert", *revs}


def make_v1_store(path: Path, ws: Path) -> None:
    """A store as ctxview's schema 1 wrote it: the FTS trigger, version 1, one session."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript("BEGIN;" + SCHEMA_V1 + RID_TRIGGER + fts_trigger(1_000_000) + "COMMIT;")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
    conn.execute(
        "INSERT INTO sessions (id, title, workspace, started, next_rid) "
        "VALUES ('old', 'from v1', ?, 1700000000.0, 4096)",
        (str(ws),),
    )
    conn.execute(
        "INSERT INTO sessions (id, title, workspace, started, next_rid, parent_session) "
        "VALUES ('old-child', 'a sub-agent', ?, 1700000001.0, 4096, 'old')",
        (str(ws),),
    )
    conn.execute(
        "INSERT INTO events (session, seq, ts, kind, tool, call_ref, args) "
        "VALUES ('old', 1, 1700000000.5, 'call', 'bash', 'c1', '{\"command\": \"ls\"}')"
    )
    conn.execute(
        "INSERT INTO events (session, seq, ts, kind, tool, call_ref, rid, rkind, shown_chars, "
        "stored_chars) VALUES ('old', 2, 1700000000.6, 'result', 'bash', 'c1', 4096, 'full', "
        "20, 13)"
    )
    conn.execute(
        "INSERT INTO bodies (session, rid, shown, stored) "
        "VALUES ('old', 4096, '[#1000]\nold aardvark', 'old aardvark')"
    )
    conn.close()


async def test_v1_store_is_migrated_and_keeps_its_data(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    make_v1_store(store, tmp_path)
    async with await Writer.open(store) as writer:
        session = await Session.resume(writer, "old")
        assert (await session.insert("bash", {"command": "ls"}, "new zebra")).startswith("[#1001]")
    with sqlite3.connect(store) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT seq FROM events WHERE session = 'old' AND kind = 'message'"
        ).fetchall()
    assert version == (str(SCHEMA_VERSION),)
    assert any("events_kind" in str(row) for row in plan)
    async with await Reader.open(store) as reader:
        old = await reader.session("old")
        assert old is not None and old.title == "from v1" and old.results == 2
        body = await reader.body("old", 4096)
        assert body is not None and body.stored == "old aardvark"
        # Text indexed by the old trigger and text indexed by the writer are both found.
        assert await reader.search("old", "aardvark") == [4096]
        assert await reader.search("old", "zebra") == [4097]
        child = await reader.session("old-child")
        assert child is not None and child.parent_session == "old"
    # A migrated store and a new one have the same tables, indexes and triggers.
    fresh = tmp_path / "fresh.db"
    await make_store(fresh, tmp_path)
    assert schema_of(store) == schema_of(fresh)


def make_v6_store(path: Path) -> None:
    """A store as schema 6 left it: request records of the import and of the proxy, no revs."""
    from ctxview.store import proxy_records, schema
    from ctxview.store.requests import RequestRecords, RequestRow
    from ctxview.store.requests import write as write_requests

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    schema._run_script(conn, SCHEMA_V1 + RID_TRIGGER)
    for version in range(1, 6):
        schema.MIGRATIONS[version](conn)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '6')")
    conn.execute("INSERT INTO sessions (id, started, next_rid) VALUES ('cc-x', 1700000000.0, 1)")
    rows = [RequestRow(n, f"req{n}", 1700000000.0 + n, "repl", "s1", None, 0, '["m1"]', "{}",
                       "[]", None) for n in (1, 2)]  # fmt: skip
    write_requests(conn, "cc-x", RequestRecords(
        shapes=[("s1", '{"system":[],"tools":[]}')],
        blobs=[("m1", '{"content":[{"text":"hi","type":"text"}],"role":"user"}')],
        requests=rows, usage=[("req1", '{"input_tokens":3}')], cost='{"total":1}'))  # fmt: skip
    record = proxy_records.ProxyRow(
        "cc-x", 7, "px_1", None, "anthropic-count-tokens", "POST", "/v1/messages/count_tokens",
        "http://127.0.0.1:9", 1700000001.0, 1.0, 2.0, 200, "complete", None, "[]", "[]", 2,
        "ab", 0, None, b"{}", '{"input_tokens": 42}', None, None)  # fmt: skip
    proxy_records._write(conn, ("cc-x", "", "", 1700000001.0, "{}"),
                         tuple(getattr(record, f) for f in proxy_records._COLS))  # fmt: skip
    conn.execute("COMMIT")
    conn.close()


async def test_v6_store_gets_revs_on_its_request_records(tmp_path: Path) -> None:
    """Schema 7: every request-record row of an older store gets a rev of its own (a push sends
    a session's rows past the rev it last sent), and the rows written after get higher ones."""
    from ctxview.store.push_source import PushSource, machine_name
    from ctxview.store.requests import RequestRecords

    store = tmp_path / "store.db"
    make_v6_store(store)
    machine_name(store)  # what a push does first: the store migrated
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),)  # fmt: skip
        old = [r for t in ("api_requests", "api_costs", "proxy_records")
               for r in conn.execute(f"SELECT rev FROM {t}")]  # fmt: skip
    assert sorted(r[0] for r in old) == [1, 2, 3, 4]
    source = PushSource(store)
    try:
        assert source.side_revs("cc-x") == {"api_requests": 2, "api_costs": 3, "proxy_records": 4}
        rows, shared, more = source.side_slice("cc-x", {"api_requests": 1}, 100, 1 << 20)
        assert [r[1] for r in rows["api_requests"]] == [2] and not more
        assert shared["api_blobs"] and shared["api_shapes"]
    finally:
        source.close()
    # A usage that comes later moves its request past the others.
    async with await Writer.open(store) as w, w.transaction():
        await w.write_requests("cc-x", RequestRecords(usage=[("req2", '{"input_tokens": 9}')]))
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT n, rev FROM api_requests ORDER BY n").fetchall() == [
            (1, 1), (2, 5)]  # fmt: skip
    fresh = tmp_path / "fresh.db"
    await make_store(fresh, tmp_path)
    assert schema_of(store) == schema_of(fresh)


async def test_migration_by_several_connections_at_once(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    make_v1_store(store, tmp_path)
    opened = await asyncio.gather(Writer.open(store), Writer.open(store), Reader.open(store))
    for handle in opened:
        await handle.close()
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT value FROM meta").fetchall() == [(str(SCHEMA_VERSION),)]


def ctxview(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxview.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_refuses_bad_stores_in_one_sentence(tmp_path: Path) -> None:
    random_bytes = tmp_path / "random.db"
    random_bytes.write_bytes(os.urandom(4096))
    newer = tmp_path / "newer.db"
    asyncio.run(make_store(newer, tmp_path))
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for store in (tmp_path / "nonexistent.db", random_bytes, newer, folder):
        for command in (["sessions"], ["show", "1000"], ["recall", "1000"]):
            done = ctxview("--store", str(store), *command)
            assert done.returncode != 0, (store, command)
            assert done.stdout == ""
            line = done.stderr.strip()
            assert line.startswith("ctxview: "), done.stderr
            one_sentence(line.removeprefix("ctxview: "))


def test_cli_on_a_damaged_store(tmp_path: Path) -> None:
    """A store whose pages were overwritten: one sentence, not a traceback."""
    store = tmp_path / "damaged.db"

    async def fill() -> None:
        async with await Writer.open(store) as writer:
            session = await Session.start(writer, tmp_path)
            for i in range(200):
                await session.insert("bash", {"command": str(i)}, f"line {i}\n" * 200)
            await writer.checkpoint()

    asyncio.run(fill())
    with sqlite3.connect(store) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(store.read_bytes())
    page = 4096
    for start in range(3 * page, len(data) - page, 5 * page):
        data[start : start + page] = os.urandom(page)
    store.write_bytes(bytes(data))
    failed = 0
    for command in (["sessions"], ["show", "1000"]):
        done = ctxview("--store", str(store), *command)
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode != 0:
            failed += 1
            line = done.stderr.strip()
            assert line.startswith("ctxview: ")
            one_sentence(line.removeprefix("ctxview: "))
    assert failed, "the damage must be seen"


async def test_search_indexes_the_sessions_fts_max_chars(tmp_path: Path) -> None:
    """Only the first `fts.max_chars` of a body are indexed, per session (the writer feeds the
    index since schema 2)."""
    store = tmp_path / "store.db"
    async with await Writer.open(store) as writer:
        short = await Session.start(writer, tmp_path, config={"fts.max_chars": 12})
        await short.insert("bash", {}, "alpha beta gamma delta")
        full = await Session.start(writer, tmp_path)
        await full.insert("bash", {}, "alpha beta gamma delta")
        async with writer.batch():  # queued steps keep their own session's limit
            await short.insert("bash", {}, "alpha beta gamma delta")
    async with await Reader.open(store) as reader:
        assert await reader.search(short.id, "beta") == [0x1000, 0x1001]
        assert await reader.search(short.id, "delta") == []
        assert await reader.search(full.id, "delta") == [0x1000]


def test_cli_output_into_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`ctxview show … | head -1`: no BrokenPipeError traceback when the reader leaves."""
    store = tmp_path / "store.db"

    async def fill() -> None:
        async with await Writer.open(store) as writer:
            session = await Session.start(writer, tmp_path)
            await session.insert("bash", {}, "".join(f"line {i}\n" for i in range(200_000)))

    asyncio.run(fill())
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxview.cli", "--store", str(store), "show", "1000", "--stored"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"line 0\n"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=30)
    assert "Traceback" not in err and err == ""
