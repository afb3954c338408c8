"""`ctxview import` of a JSON export (`export --format json`) with a line nested past 200 levels,
or past json's own stack: the line is skipped and listed with its file and line, never a
traceback, and the rest of the export is imported."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sqlite3
from pathlib import Path

import pytest

from ctxview.cli import main
from ctxview.engine.session import Session
from ctxview.store import Writer


@pytest.mark.parametrize("depth", [201, 990, 100_000])
def test_a_deep_line_in_an_export_is_skipped_and_listed(tmp_path: Path, depth: int) -> None:
    async def build() -> None:
        async with await Writer.open(tmp_path / "a.db") as writer:
            session = await Session.start(writer, tmp_path, session_id="s-deep")
            await session.insert("bash", {"command": "ls"}, "a.txt")

    asyncio.run(build())
    out = tmp_path / "s.jsonl"
    assert main(["--store", str(tmp_path / "a.db"), "export", "s-deep", "--format", "json",
                 "-o", str(out), "--no-redact"]) == 0  # fmt: skip
    lines = out.read_bytes().split(b"\n")
    deep = b'{"type": "event", "session": "s-deep", "x": ' + b"[" * depth + b"]" * depth + b"}"
    lines.insert(2, deep)
    out.write_bytes(b"\n".join(lines))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--store", str(tmp_path / "b.db"), "import", str(out)])
    assert code == 0 and "Traceback" not in err.getvalue()
    assert f"{out}:3: nested deeper than 200 levels" in err.getvalue(), err.getvalue()
    conn = sqlite3.connect(tmp_path / "b.db")
    assert conn.execute("SELECT count(*) FROM events WHERE rid IS NOT NULL").fetchone() == (1,)
    conn.close()
