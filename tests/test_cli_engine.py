"""The engine's commands: `ctxview sessions`, `show`, `recall`, run as a user runs them, over a
store written by the engine itself."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from engine_helpers import workspace_and_writer

from ctxview.engine.session import Session
from ctxview.store.writer import Writer

_SCRIPT = Path(sys.executable).parent / "ctxview"
CTXVIEW = str(_SCRIPT) if _SCRIPT.exists() else shutil.which("ctxview") or "ctxview"
FIRST, SECOND = "20260101-000000-aaaaaa", "20260102-000000-bbbbbb"
OUTPUT = "\n".join(f"L{i}" for i in range(1, 501))


async def _write_store(root: Path) -> None:
    async with workspace_and_writer(root, {"a.txt": "a\nb\nc\n"}, "store.db") as (ws, writer):
        s = await Session.start(writer, ws, title="first", session_id=FIRST, started=1000.0)
        await s.run("read", {"path": "a.txt"})  # #1000
        await s.insert("bash", {"command": "seq"}, OUTPUT)  # #1001, capped
        await s.end(ts=2000.0)
        s = await Session.start(writer, ws, title="second", session_id=SECOND, started=3000.0)
        await s.insert("fetch", {"url": "u"}, "hello")  # #1000 of the second session


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    asyncio.run(_write_store(root))
    return root / "store.db"


def ctxview(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTXVIEW, *args], capture_output=True, text=True, timeout=60)


def one_sentence_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ctxview: ") and lines[0].endswith("."), lines[0]
    for w in words:
        assert w in lines[0]


def test_sessions_json(store: Path) -> None:
    done = ctxview("--store", str(store), "sessions", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["id"] for r in rows] == [SECOND, FIRST]  # newest first
    first = rows[1]
    for key in ("id", "title", "workspace", "started", "ended", "results"):
        assert key in first
    assert first["title"] == "first"
    assert first["started"] == 1000.0 and first["ended"] == 2000.0
    assert first["results"] == 2
    assert Path(first["workspace"]).name == "ws"
    assert rows[0]["ended"] is None and rows[0]["results"] == 1


def test_sessions_table(store: Path) -> None:
    done = ctxview("sessions", "--store", str(store))
    assert done.returncode == 0
    assert FIRST in done.stdout and SECOND in done.stdout and "first" in done.stdout


def test_show_a_result_as_the_model_saw_it(store: Path) -> None:
    done = ctxview("--store", str(store), "show", "#1000", "--session", FIRST)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[#1000 a.txt lines 1-3 of 3 sha ")
    assert done.stdout.endswith("]\n1: a\n2: b\n3: c\n")
    capped = ctxview("--store", str(store), "show", "1001", "--session", FIRST)
    assert "\n[200 lines elided, full output #1001]\nL401\n" in capped.stdout


def test_show_defaults_to_the_newest_session(store: Path) -> None:
    done = ctxview("--store", str(store), "show", "1000")
    assert done.stdout == "[#1000]\nhello\n"


def test_show_stored_text(store: Path) -> None:
    done = ctxview("--store", str(store), "show", "#1001", "--session", "20260101", "--stored")
    assert done.stdout == OUTPUT + "\n"


def test_show_a_whole_session_by_prefix(store: Path) -> None:
    done = ctxview("--store", str(store), "show", "--session", "20260101-")
    assert done.returncode == 0
    assert "[#1000 a.txt lines 1-3 of 3" in done.stdout and "hello" not in done.stdout


def test_recall_whole_and_window(store: Path) -> None:
    whole = ctxview("--store", str(store), "recall", "#1001", "--session", FIRST)
    assert whole.returncode == 0 and whole.stdout == OUTPUT + "\n"
    window = ctxview("--store", str(store), "recall", "1001", "--session", "20260101-00",
                     "--offset", "250", "--limit", "3")  # fmt: skip
    assert window.stdout == "L250\nL251\nL252\n"
    last = ctxview("--store", str(store), "recall", "1001", "--session", FIRST, "--offset", "499")
    assert last.stdout == "L499\nL500\n"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["recall", "xyz"], ["xyz", "result id"]),
        (["show", "#zz"], []),
        (["recall", "#1000", "--session", "nope"], ["nope"]),
        (["show", "--session", "2026010"], ["2026010"]),  # a prefix of both sessions
        (["recall", "#abcd", "--session", FIRST], ["#abcd"]),
        (["recall", "1000", "--session", FIRST, "--offset", "9"], ["past the end"]),
        (["recall", "1000", "--session", FIRST, "--offset", "0"], ["--offset"]),
    ],
)
def test_errors_are_one_sentence(store: Path, args: list[str], words: list[str]) -> None:
    one_sentence_error(ctxview("--store", str(store), *args), *words)


@pytest.mark.parametrize("command", [["sessions"], ["show", "1000"], ["recall", "1000"]])
def test_a_missing_store_is_one_sentence(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nowhere" / "store.db"
    one_sentence_error(ctxview("--store", str(missing), *command), str(missing))
    assert not missing.exists()  # reading never creates a store


def test_an_empty_store_has_no_sessions(tmp_path: Path) -> None:
    async def make() -> None:
        await (await Writer.open(tmp_path / "store.db")).close()

    asyncio.run(make())
    assert (
        ctxview("--store", str(tmp_path / "store.db"), "sessions", "--json").stdout.strip() == "[]"
    )
    one_sentence_error(
        ctxview("--store", str(tmp_path / "store.db"), "show", "1000"), "no sessions"
    )
