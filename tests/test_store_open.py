"""Opening the store (issue 8, point 6): what a failure says (disk full, read-only, busy,
damaged), a read that never writes (a zero-byte file stays zero bytes, no -wal or -shm left
behind), SQLite's quick_check on open, and the modes of the folders and files we make.

Real parts only: a real full disk (a small tmpfs, mounted when we may), a file the kernel refuses
to write (`chattr +i` for root, who may write any 0444 file; mode 0444 otherwise), another process
holding the write lock, pages overwritten with random bytes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import sqlite3
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxview.engine.session import Session
from ctxview.store import Reader, StoreError, StoreWarning, Writer
from ctxview.store.connect import sentence

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "import"
READ_COMMANDS = (["sessions"], ["sessions", "--json"], ["show"], ["recall", "1000"], ["stats"])


def one_sentence(text: str) -> None:
    assert "\n" not in text, text
    assert text.endswith("."), text
    assert ". " not in text.rstrip("."), f"more than one sentence: {text}"


def ctxview(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxview.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command printed: no traceback, exit 1."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("ctxview: ")]
    assert lines, done.stderr
    line = lines[-1].removeprefix("ctxview: ")
    one_sentence(line)
    return line


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def side_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + "-"))


async def make_store(path: Path, ws: Path, results: int = 1) -> str:
    async with await Writer.open(path) as writer:
        session = await Session.start(writer, ws, title="kept")
        for i in range(results):
            await session.insert("bash", {"command": f"echo {i}"}, f"hello {i}\n" * 20)
        return session.id


def closed_cleanly(path: Path) -> None:
    """Fold the WAL into the file and drop it, so the bytes on disk are the whole store."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


# A read never writes


def test_read_commands_leave_a_zero_byte_file_as_it_is(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    store.write_bytes(b"")
    for command in (*READ_COMMANDS, ["view"]):  # the viewer refuses it before it starts
        line = refusal(ctxview("--store", str(store), *command))
        assert line == f"{store} is an empty file, not a ctxview store; it is left as it is."
        assert store.read_bytes() == b""
        assert side_files(store) == []


async def test_reader_never_writes_the_store(tmp_path: Path) -> None:
    """No WAL checkpoint, no pragma, no file it made left behind."""
    store = tmp_path / "store.db"
    await make_store(store, tmp_path)
    closed_cleanly(store)
    before, mtime = digest(store), store.stat().st_mtime_ns
    async with await Reader.open(store) as reader:
        (row,) = await reader.sessions()
        assert row.title == "kept" and row.results == 1
    for command in READ_COMMANDS:
        done = ctxview("--store", str(store), *command)
        assert done.returncode == 0, done.stderr
    assert digest(store) == before and store.stat().st_mtime_ns == mtime
    assert side_files(store) == [], "a read leaves no -wal or -shm it made"


async def test_reader_brings_an_older_store_forward_but_not_a_read_only_one(
    tmp_path: Path, read_only: list[Path]
) -> None:
    from test_store_schema import make_v1_store

    from ctxview.store import SCHEMA_VERSION

    def version(path: Path) -> str:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'")
            value = found.fetchone()[0]
        conn.close()
        return value

    writable, locked = tmp_path / "old.db", tmp_path / "old-locked.db"
    for path in (writable, locked):
        make_v1_store(path, tmp_path)
        closed_cleanly(path)
    make_read_only(locked, read_only)
    before = digest(locked)
    for path in (writable, locked):
        async with await Reader.open(path) as reader:
            old = await reader.session("old")
            assert old is not None and old.title == "from v1"
        assert side_files(path) == []
    assert version(writable) == str(SCHEMA_VERSION)
    assert version(locked) == "1" and digest(locked) == before


async def test_reader_of_a_store_in_use_leaves_the_writers_files(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    async with await Writer.open(store) as writer:
        session = await Session.start(writer, tmp_path)
        await session.insert("bash", {}, "one")
        async with await Reader.open(store) as reader:
            assert len(await reader.events(session.id)) == 2
        assert side_files(store) == ["store.db-shm", "store.db-wal"]
        await session.insert("bash", {}, "two")  # the writer goes on as before
    async with await Reader.open(store) as reader:
        assert len(await reader.events(session.id)) == 4


# A read-only store


@pytest.fixture
def read_only() -> Iterator[list[Path]]:
    """Make files read-only for this process: `chattr +i` when root (who may write any 0444
    file), mode 0444 otherwise; undone after the test."""
    made: list[Path] = []
    yield made
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=False)
        else:
            path.chmod(0o600)


def make_read_only(path: Path, made: list[Path]) -> None:
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not possible here: {done.stderr.strip()}")
    else:
        path.chmod(0o444)
    made.append(path)
    assert not os.access(path, os.W_OK)


async def test_read_only_store_reads_and_leaves_no_wal_or_shm(
    tmp_path: Path, read_only: list[Path]
) -> None:
    store = tmp_path / "store.db"
    sid = await make_store(store, tmp_path, results=3)
    closed_cleanly(store)
    assert side_files(store) == []
    make_read_only(store, read_only)
    before = digest(store)
    for command in READ_COMMANDS:
        done = ctxview("--store", str(store), *command)
        assert done.returncode == 0, (command, done.stderr)
        assert side_files(store) == [], f"{command} left {side_files(store)}"
    assert sid in ctxview("--store", str(store), "sessions").stdout
    async with await Reader.open(store) as reader:
        assert (await reader.session(sid)).results == 3  # type: ignore[union-attr]
    assert side_files(store) == []
    assert digest(store) == before
    # A command that writes says so, in one sentence.
    done = ctxview("--store", str(store), "import", str(FIXTURES / "claude_session.jsonl"))
    line = refusal(done)
    assert line == f"The store at {store} is read-only, so ctxview cannot write to it."
    assert digest(store) == before and side_files(store) == []


# A full disk, a busy store


def big_transcript(path: Path, results: int, size: int) -> None:
    """A Claude Code transcript of `results` Bash calls, each with a `size`-character output."""
    sid = "77777777-2222-3333-4444-555555555555"
    rng = random.Random(8)
    lines = []

    def record(kind: str, n: int, message: dict[str, object]) -> None:
        lines.append({"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None,
                      "timestamp": f"2026-01-01T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                      "sessionId": sid, "cwd": "/home/dev/proj", "version": "2.1.14",
                      "isSidechain": False, "userType": "external", "message": message})  # fmt: skip

    record("user", 0, {"role": "user", "content": "Run the tests"})
    for i in range(results):
        call = f"t{i}"
        record("assistant", 2 * i + 1, {"id": f"msg_{i}", "type": "message", "role": "assistant",
               "model": "m", "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                          "input": {"command": f"run {i}"}}]})  # fmt: skip
        # Random letters: the store cannot compress or share them.
        text = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz \n", k=size))
        record("user", 2 * i + 2, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": text}]})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MB file system (tmpfs): mounting one needs root."""
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs",
                           str(where)], capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"a small tmpfs cannot be mounted here (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_full_disk_says_the_disk_is_full(tmp_path: Path, small_disk: Path) -> None:
    store = small_disk / "store.db"
    done = ctxview("--store", str(store), "import", str(FIXTURES / "claude_session.jsonl"))
    assert done.returncode == 0, done.stderr
    sessions_before = ctxview("--store", str(store), "sessions", "--json").stdout
    big = tmp_path / "big.jsonl"
    big_transcript(big, results=60, size=100_000)  # 6 MB of output for a 4 MB disk
    line = refusal(ctxview("--store", str(store), "import", str(big)))
    assert line == (
        f"The disk is full, so the store at {store} cannot be written; free some space and "
        f"try again."
    )
    # Nothing committed was lost, and the store is whole.
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    after = json.loads(ctxview("--store", str(store), "sessions", "--json").stdout)
    kept = {s["id"] for s in json.loads(sessions_before)}
    assert kept <= {s["id"] for s in after}


def test_busy_store_says_it_is_busy(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    asyncio.run(make_store(store, tmp_path))
    # Another process holds the write lock for longer than the busy timeout (until it is killed
    # below: 30 s could run out while a loaded machine started the two commands).
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(600)\n",
         str(store)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        t0 = time.monotonic()
        done = ctxview("--store", str(store), "import", str(FIXTURES / "claude_session.jsonl"),
                       env={"CTXVIEW_BUSY_TIMEOUT_MS": "700"})  # fmt: skip
        line = refusal(done)
        assert line == (
            f"The store at {store} is busy: another process kept it locked for more than "
            f"0.7 s; try again when that process is done."
        )
        assert time.monotonic() - t0 < 60
        # Reading is never blocked by a writer (WAL).
        assert ctxview("--store", str(store), "sessions").returncode == 0
    finally:
        holder.kill()
        holder.wait()


def test_every_sqlite_error_is_one_sentence_that_says_what_happened(tmp_path: Path) -> None:
    """SQLite's own errors, made for real, through the mapping the CLI uses."""
    made: dict[str, sqlite3.Error] = {}
    try:
        sqlite3.connect(tmp_path / "no-such-folder" / "x.db")
    except sqlite3.Error as exc:
        made["cantopen"] = exc
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(4096))
    try:
        sqlite3.connect(garbage).execute("SELECT * FROM sqlite_master")
    except sqlite3.Error as exc:
        made["notadb"] = exc
    plain = tmp_path / "plain.db"
    with sqlite3.connect(plain) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    try:
        sqlite3.connect(f"file:{plain}?mode=ro", uri=True).execute("INSERT INTO t VALUES (1)")
    except sqlite3.Error as exc:
        made["readonly"] = exc
    said = {name: sentence(exc, tmp_path / "store.db") for name, exc in made.items()}
    for text in said.values():
        one_sentence(text)
    assert said["cantopen"].startswith(f"The store at {tmp_path / 'store.db'} cannot be opened")
    assert (
        said["notadb"]
        == f"{tmp_path / 'store.db'} is not an SQLite database, so it is not a ctxview store."
    )
    assert "is read-only" in said["readonly"]
    assert "may be damaged" not in " ".join(said.values())


# Damage in the middle of a store


def damage_one_page(store: Path, seed: int) -> None:
    data = bytearray(store.read_bytes())
    page = 4096
    pages = len(data) // page
    n = random.Random(seed).randrange(pages // 3, 2 * pages // 3)
    data[n * page : (n + 1) * page] = random.Random(seed).randbytes(page)
    store.write_bytes(bytes(data))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
async def test_random_bytes_in_the_middle_are_found_on_open(tmp_path: Path, seed: int) -> None:
    store = tmp_path / "store.db"
    await make_store(store, tmp_path, results=150)
    closed_cleanly(store)
    damage_one_page(store, seed)
    before = digest(store)
    messages = set()
    for opener in (Reader.open, Writer.open):
        with pytest.raises(StoreError) as refused:
            await opener(store)
        messages.add(str(refused.value))
    (message,) = messages
    one_sentence(message)
    assert message.startswith(f"The store at {store} is damaged (SQLite's check found: ")
    assert message.endswith("); it cannot be opened.")
    assert refusal(ctxview("--store", str(store), "sessions")) == message
    assert digest(store) == before


# Modes of what we make


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own, so the default store is made under it."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("CTXVIEW_STORE", raising=False)
    return home


async def _open_default() -> list[str]:
    """Open and close a writer on the default store; the warnings it gave."""
    from ctxview.store import default_store_path

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        async with await Writer.open(default_store_path()):
            pass
    return [str(w.message) for w in seen if issubclass(w.category, StoreWarning)]


async def test_folders_made_for_the_default_store_are_0700_under_umask_000(home: Path) -> None:
    old = os.umask(0)
    try:
        assert await _open_default() == []
    finally:
        os.umask(old)
    for folder in (
        home / ".local",
        home / ".local" / "state",
        home / ".local" / "state" / "ctxview",
    ):
        assert _mode(folder) == 0o700, folder
    assert _mode(home / ".local" / "state" / "ctxview" / "store.db") == 0o600


async def test_loose_store_and_own_folder_are_tightened_parents_warned(home: Path) -> None:
    state = home / ".local" / "state"
    state.mkdir(parents=True)
    state.chmod(0o777)  # not ours: warned about, never changed
    own = state / "ctxview"
    store = own / "store.db"
    await make_store(store, home)
    own.chmod(0o755)
    store.chmod(0o644)
    said = await _open_default()
    assert _mode(own) == 0o700 and _mode(store) == 0o600
    assert _mode(state) == 0o777
    assert said == [
        f"ctxview's folder {own} could be read by other users (mode 0755); it is now 0700.",
        f"The folder {state} above the store can be changed by other users (mode 0777); "
        f"consider chmod go-w on it.",
        f"The store {store} could be read by other users (mode 0644); it is now 0600.",
    ]
    for text in said:
        one_sentence(text)
    assert await _open_default() == said[1:2], "once tightened, only the parent is left"
    # The CLI says it on stderr, one line each.
    state.chmod(0o755)
    store.chmod(0o640)
    done = ctxview("import", str(FIXTURES / "claude_session.jsonl"), env={"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert (
        f"ctxview: The store {store} could be read by other users (mode 0640); it is now 0600."
        in done.stderr.splitlines()
    )


async def test_a_foreign_file_keeps_its_mode(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    other.chmod(0o644)
    with pytest.raises(StoreError):
        await Writer.open(other)
    assert _mode(other) == 0o644


def test_quick_check_of_a_large_store_stops_at_its_budget(tmp_path: Path) -> None:
    """Past FULL_CHECK_BYTES the check is cut off by its budget (the viewer's first screen).

    Told by the work the check did (SQLite's progress handler counts its steps), not by how
    long it took: a full check here took 75 ms and the cut one, a loaded machine's, 101 ms (an
    interrupt sent before the statement starts is lost and sent again 50 ms later). Each
    thousand steps sleep a millisecond, so the whole check lasts well past the budget and the
    watchdog's retries."""
    from ctxview.store.connect import quick_check

    store = tmp_path / "big.db"
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT)")
        conn.execute("CREATE INDEX t_a ON t (a)")
        conn.executemany(
            "INSERT INTO t (a, b) VALUES (?, ?)", ((f"k{i}", "x" * 500) for i in range(120_000))
        )
    conn.close()
    conn = sqlite3.connect(store)
    steps: list[int] = []

    def step() -> int:
        steps.append(1)
        time.sleep(0.001)
        return 0  # go on

    try:
        conn.set_progress_handler(step, 1000)
        assert quick_check(conn, None) is None
        full, steps[:] = len(steps), []
        assert full >= 300, full  # 0.3 s at least: past the budget and a retry or five
        assert quick_check(conn, 0.002) is None
        assert len(steps) < full / 2, (len(steps), full)
        conn.set_progress_handler(None, 0)
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (120_000,)  # not interrupted
    finally:
        conn.close()
