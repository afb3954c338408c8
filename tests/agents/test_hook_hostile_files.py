"""The resident hook engine never blocks on a file a hook input names: a FIFO, a link to one,
/dev/zero or a folder as the transcript, or as the file of a Read or an Edit, costs its own call
(answered at once, the odd file left alone), and the other sessions' hooks go on answering
quickly. Through the hook command Claude Code runs, against the real engine process."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxview.agents import failures
from ctxview.agents.hook_client import stop

FAST = 1.0  # seconds a hook may take here on a loaded machine; a blocked engine costs 1.8 s


def _hook(store: Path, payload: dict[str, Any], timeout: float = 30) -> tuple[bytes, float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ctxview.agents.hook_client", "post-tool-use",
         "--store", str(store)], input=json.dumps(payload).encode(), capture_output=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == b""
    return done.stdout, time.monotonic() - start


def _bash(tmp: Path, sid: str, ref: str, transcript: Path | str) -> dict[str, Any]:
    return {"session_id": sid, "cwd": str(tmp / "proj"), "transcript_path": str(transcript),
            "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": ref,
            "tool_input": {"command": "echo hi"},
            "tool_response": {"stdout": "hi", "stderr": "", "interrupted": False,
                              "isImage": False, "noOutputExpected": False}}  # fmt: skip


def _shown(out: bytes) -> Any:
    return json.loads(out)["hookSpecificOutput"]


@contextlib.contextmanager
def _engine(tmp: Path) -> Iterator[Path]:
    """A store with its engine started (by a first hook of another session), and every FIFO
    made here released at the end, so an engine stuck in one (today's bug) can stop."""
    (tmp / "proj").mkdir()
    store = tmp / "state" / "store.db"
    out, _ = _hook(store, _bash(tmp, "warm", "w0", tmp / "none.jsonl"))
    assert b"[#1000]" in out
    try:
        yield store
    finally:
        for fifo in tmp.glob("*.fifo"):
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        stop(store)


def _others_answer_quickly(tmp: Path, store: Path, hostile: dict[str, Any]) -> bytes:
    """Send `hostile` (in a thread: the hook command it runs), then five hooks of another
    session: each answers with its shaped output within FAST. The hostile call's output."""
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(_hook(store, hostile)[0]))
    t.start()
    time.sleep(0.2)  # the hostile call reaches the engine first
    for i in range(5):
        out, took = _hook(store, _bash(tmp, "other", f"o{i}", tmp / "none.jsonl"))
        assert out and _shown(out)["updatedToolOutput"]["stdout"].startswith("[#"), out
        assert took < FAST, (i, took)
    t.join(30)
    assert not t.is_alive()
    return got[0] if got else b""


@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo", "dev-zero", "folder"])
def test_an_odd_transcript_costs_its_own_call_only(tmp_path: Path, kind: str) -> None:
    with _engine(tmp_path) as store:
        fifo = tmp_path / "t.fifo"
        os.mkfifo(fifo)
        transcript = {
            "fifo": fifo,
            "link-to-fifo": tmp_path / "link.jsonl",
            "dev-zero": Path("/dev/zero"),
            "folder": tmp_path / "folder.jsonl",
        }[kind]
        if kind == "link-to-fifo":
            transcript.symlink_to(fifo)
        if kind == "folder":
            transcript.mkdir()
        out = _others_answer_quickly(tmp_path, store, _bash(tmp_path, "odd", "x1", transcript))
        # Its own result is shaped as ever; the transcript is left alone, and said so once.
        assert _shown(out)["updatedToolOutput"]["stdout"] == "[#1000]\nhi"
        said = [f for f in failures.read(store) if "not a regular file" in f["error"]]
        assert len(said) == 1 and said[0]["session_id"] == "odd"


def test_a_read_or_an_edit_of_a_fifo_costs_its_own_call_only(tmp_path: Path) -> None:
    with _engine(tmp_path) as store:
        fifo = tmp_path / "proj.fifo"
        os.mkfifo(fifo)
        read = {**_bash(tmp_path, "odd", "r1", tmp_path / "none.jsonl"), "tool_name": "Read",
                "tool_input": {"file_path": str(fifo)},
                "tool_response": {"type": "text", "file": {
                    "filePath": str(fifo), "content": "a\nb", "numLines": 2, "startLine": 1,
                    "totalLines": 2}}}  # fmt: skip
        out = _others_answer_quickly(tmp_path, store, read)
        assert _shown(out)["updatedToolOutput"]["file"]["content"].startswith("[#1000 ")
        edit = {**_bash(tmp_path, "odd", "e1", tmp_path / "none.jsonl"), "tool_name": "Edit",
                "tool_input": {"file_path": str(fifo), "old_string": "a", "new_string": "c"},
                "tool_response": {"filePath": str(fifo), "oldString": "a", "newString": "c",
                                  "originalFile": "a\nb\n", "structuredPatch": []}}  # fmt: skip
        out = _others_answer_quickly(tmp_path, store, edit)
        assert "-a\n+c" in _shown(out)["additionalContext"]  # from the report, never the FIFO


def _imported(store: Path, sid: str) -> int:
    """How far the engine's import of `sid`'s transcript has committed (bytes), 0 before."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute("SELECT data FROM sessions WHERE id = ?", (sid,)).fetchone()
    finally:
        conn.close()
    offset = json.loads(row[0] or "{}").get("import", {}).get("offset", 0) if row else 0
    return offset if isinstance(offset, int) else 0


def test_a_huge_transcript_costs_its_own_call_only(tmp_path: Path) -> None:
    """A session resumed from a 30 MB transcript: its engine imports it (after its calls'
    answers), in short transactions, so another session's hooks wait for the store a moment at
    most while the import goes on (they waited for the whole import step, 1.3-1.6 s, before)."""
    with _engine(tmp_path) as store:
        big = tmp_path / "big.jsonl"
        cwd = str(tmp_path / "proj")
        with big.open("w") as f:
            for i in range(40_000):
                said = {"role": "user", "content": "x" * 600} if i % 2 == 0 else {
                    "id": f"m{i}", "role": "assistant", "model": "m",
                    "content": [{"type": "text", "text": "y" * 600}]}  # fmt: skip
                f.write(
                    json.dumps(
                        {
                            "type": "user" if i % 2 == 0 else "assistant",
                            "uuid": f"u{i}",
                            "sessionId": "big",
                            "cwd": cwd,
                            "timestamp": "2026-12-01T07:00:00Z",
                            "message": said,
                        }
                    )
                    + "\n"
                )
        size = big.stat().st_size
        assert size > 30e6
        for i in range(3):  # answered at once: the import goes on in the engine after
            out, _ = _hook(store, _bash(tmp_path, "big", f"a{i}", big))
            assert b"[#10" in out
        took, during = [], []
        deadline = time.monotonic() + 120
        while (offset := _imported(store, "cc-big")) < size:
            assert time.monotonic() < deadline, offset
            out, secs = _hook(store, _bash(tmp_path, "other", f"o{len(took)}", tmp_path / "n"))
            assert out, len(took)
            took.append(secs)
            if offset > 0 and _imported(store, "cc-big") < size:  # the import under way
                during.append(secs)
        assert len(during) >= 5 and max(took) < FAST, (during, took)
