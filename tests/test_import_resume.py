"""An interrupted import resumes exactly (issue 8, point 1): the offset and the parser's state are
committed with the rows they cover, so an exception, a full store or a file that grows never
duplicates or loses anything. Each test compares the whole store (every session, event and body,
import_compare.dump) with one clean import of the same file. Kills of real processes are in
test_import_kill.py; growth of every real transcript in test_import_growth.py."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from import_compare import differences, dump, grown, line_ends
from import_fuzz import command_errors
from import_kill import build, command

from ctxview.engine.session import Session
from ctxview.importers.runner import FileImporter, Parser
from ctxview.store import Writer

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"
FILES = ["claude_session.jsonl", "claude_inline_sidechain.jsonl", "codex_rollout.jsonl",
         "codex_legacy.jsonl"]  # fmt: skip


class Crash(BaseException):
    """Stands for anything that stops a run mid-transaction (a bug, a signal turned exception)."""


class CrashingImporter(FileImporter):
    """Commits every `commit_lines` lines and raises Crash when its parser is fed the record
    numbered `at` (counted from its start), inside a transaction."""

    commit_lines = 3

    def __init__(self, writer: Writer, path: Path, at: int, pause: float = 0.0) -> None:
        super().__init__(writer, path)
        self.at, self.fed, self.pause = at, 0, pause

    def _parser(self, state: dict[str, Any]) -> Parser:
        parser = super()._parser(state)
        feed = parser.feed

        async def crashing(rec: Any, lineno: int) -> None:
            self.fed += 1
            if self.fed == self.at:
                raise Crash
            await feed(rec, lineno)
            if self.pause:
                await asyncio.sleep(self.pause)  # other tasks run while the batch is open

        parser.feed = crashing  # type: ignore[method-assign]
        return parser


async def _clean(store: Path, path: Path) -> None:
    async with await Writer.open(store) as writer:
        await FileImporter(writer, path).step()


@pytest.mark.parametrize("name", FILES)
async def test_an_exception_on_any_line_then_a_rerun_equals_one_clean_import(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes((FIXTURES / name).read_bytes())
    await _clean(tmp_path / "clean.db", path)
    want = dump(tmp_path / "clean.db")
    lines = len(line_ends(path.read_bytes()))
    for at in range(1, lines + 2):
        store = tmp_path / f"crash{at}.db"
        async with await Writer.open(store) as writer:
            try:
                await CrashingImporter(writer, path, at).step()
                break  # past the last record: every one has been crashed on
            except Crash:
                pass
            await FileImporter(writer, path).step()
        assert not differences(want, dump(store)), (at, differences(want, dump(store)))
    assert at > 3
    # A chain: each run commits 3 lines and crashes in its next transaction, until the end.
    store = tmp_path / "chain.db"
    runs = 0
    async with await Writer.open(store) as writer:
        while True:
            runs += 1
            try:
                await CrashingImporter(writer, path, CrashingImporter.commit_lines + 1).step()
                break
            except Crash:
                assert runs <= lines
    assert runs > 1 and not differences(want, dump(store)), differences(want, dump(store))


async def test_a_full_store_midway_then_a_rerun_equals_one_clean_import(tmp_path: Path) -> None:
    """SQLite's own 'database or disk is full' (a page limit on the connection) at some commit
    of the import; the rerun, with room, adds exactly what was not committed."""
    path = tmp_path / "big.jsonl"
    build(path, 0.6, seed=3, real=False)
    await _clean(tmp_path / "clean.db", path)
    want = dump(tmp_path / "clean.db")
    conn = sqlite3.connect(tmp_path / "clean.db")
    (needed,) = conn.execute("PRAGMA page_count").fetchone()
    conn.close()
    full = 0
    for extra in (needed // 4, needed // 2, needed * 3 // 4):
        store = tmp_path / f"full{extra}.db"
        async with await Writer.open(store) as writer:
            FileImporter.commit_lines = 200
            try:
                pages = (await writer._conn.execute_fetchall("PRAGMA page_count"))[0][0]
                await writer._conn.execute(f"PRAGMA max_page_count = {pages + extra}")
                with pytest.raises(sqlite3.OperationalError, match="full"):
                    await FileImporter(writer, path).step()
                full += 1
            finally:
                FileImporter.commit_lines = None
        async with await Writer.open(store) as writer:
            await FileImporter(writer, path).step()
        assert not differences(want, dump(store)), (extra, differences(want, dump(store)))
    assert full == 3


@pytest.mark.parametrize("name", FILES)
async def test_a_file_grown_at_every_line_and_mid_line_equals_one_clean_import(
    tmp_path: Path, name: str
) -> None:
    data = (FIXTURES / name).read_bytes()
    ends = line_ends(data)
    for i, end in enumerate(ends[:-1]):
        # In three parts: after line i+1, then in the middle of a line a little further on.
        j = min(i + 1 + i % 3, len(ends) - 1)
        cuts = [end, ends[j - 1] + (ends[j] - ends[j - 1]) // 2]
        diff = await grown(data, cuts, tmp_path / "w", name)
        assert not diff, (cuts, diff)


def test_two_imports_of_one_file_at_once_make_one_copy(tmp_path: Path) -> None:
    """Two `ctxview import` processes on the same file and store, the second started while the
    first is under way: both finish (exit 0, no 'damaged', no 'locked'), and the store holds
    what one import makes."""
    path = tmp_path / "big.jsonl"
    build(path, 1.5, seed=5, real=False)
    subprocess.run(command(tmp_path / "clean.db", "import", str(path)), check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    want = dump(tmp_path / "clean.db")
    for delay in (0.0, 0.8, 1.6):
        store = tmp_path / f"race{delay}.db"
        first = subprocess.Popen(command(store, "import", str(path)), stderr=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, text=True)  # fmt: skip
        time.sleep(delay)
        second = subprocess.Popen(command(store, "import", str(path)), stderr=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, text=True)  # fmt: skip
        errors = [p.communicate(timeout=300)[1] for p in (first, second)]
        for proc, err in zip((first, second), errors, strict=True):
            assert proc.returncode == 0, err
            assert not command_errors(err), err  # neither 'damaged', 'busy' nor 'locked'
        assert not differences(want, dump(store)), (delay, differences(want, dump(store)))


async def test_another_tasks_writes_are_not_taken_into_an_import_that_rolls_back(
    tmp_path: Path,
) -> None:
    """One writer, two tasks (as in the hook daemon): a live session inserts results while an
    import of another session crashes mid-transaction. Every live result is stored (none was
    queued into the import's batch and rolled back with it), and the import resumes exactly."""
    path = tmp_path / "claude_session.jsonl"
    path.write_bytes((FIXTURES / "claude_session.jsonl").read_bytes())
    await _clean(tmp_path / "clean.db", path)
    store = tmp_path / "shared.db"
    async with await Writer.open(store) as writer:
        live = await Session.start(writer, tmp_path, session_id="live")

        async def hooks() -> None:
            for i in range(40):
                await live.insert("bash", {"command": f"echo {i}"}, f"out {i}\n")
                await asyncio.sleep(0.001)

        crashes = 0
        for at in (5, 9, 13):  # each run commits 3 lines at a time, then crashes further on
            done = await asyncio.gather(CrashingImporter(writer, path, at, 0.003).step(),
                                        hooks(), return_exceptions=True)  # fmt: skip
            assert done[1] is None
            crashes += isinstance(done[0], Crash)
        assert crashes == 3
        await FileImporter(writer, path).step()
    conn = sqlite3.connect(store)
    (results,) = conn.execute("SELECT count(*) FROM bodies WHERE session = 'live'").fetchone()
    conn.close()
    assert results == 120
    got = {k: v for k, v in dump(store).items() if k != "live"}
    assert not differences(dump(tmp_path / "clean.db"), got)
