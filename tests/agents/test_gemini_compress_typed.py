"""A `/compress` typed by a person: the real Gemini CLI 0.61, interactive in tmux, against the
scripted Gemini API. `-p` cannot send a slash command, so this is the one way to reach Gemini's
manual compression: its `PreCompress` "manual" hook says which kind the compression was, and
the request after it holds the files-read table after Gemini's summary."""

from __future__ import annotations

import re
import shlex
import shutil
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from ctxview.agents.hook_client import stop
from tests.agents.fake_gemini import SUMMARY, Call, Say, Scripted
from tests.agents.gemini_helpers import CLI, ctxview, env

pytestmark = [
    pytest.mark.skipif(not CLI.exists(), reason="npm ci --prefix tests/agents/gemini"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.e2e,
]
T = TypeVar("T")
FAST_RETURN_MS = 30  # Gemini CLI 0.61's FAST_RETURN_TIMEOUT


def _wait(check: Callable[[], T], timeout: float, what: str, screen: Callable[[], str]) -> T:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if got := check():
            return got
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen in {timeout} s; the screen:\n{screen()}")


def _texts(body: dict[str, object]) -> str:
    contents = body.get("contents")
    assert isinstance(contents, list)
    return "\n".join(p["text"] for c in contents for p in c.get("parts", []) if "text" in p)


def test_a_typed_compress_records_a_manual_boundary_and_gives_the_table(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("alpha\nbeta\n")
    environ = env(tmp_path, "", TERM="xterm-256color")
    store = Path(environ["CTXVIEW_STORE"])
    assert ctxview(proj, environ, "install", "gemini").returncode == 0
    sock = f"ctxview-gm-{uuid.uuid4().hex[:8]}"

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True,
                              timeout=30).stdout  # fmt: skip

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "g")

    def typed(text: str) -> None:
        # Typed, then Enter on its own: keys that come all at once read as a paste, and Gemini
        # takes an Enter within FAST_RETURN_MS of the last key for a newline in the prompt (its
        # `bufferFastReturn`). The text on the screen says the keys were read: the Enter goes
        # well past that window after it, the screen can show them that soon.
        _wait(lambda: "Type your message" in screen(), 60, "the prompt", screen)
        tmux("send-keys", "-t", "g", "-l", text)
        _wait(lambda: text in screen(), 30, f"{text!r} typed", screen)
        time.sleep(FAST_RETURN_MS * 5 / 1000)
        tmux("send-keys", "-t", "g", "Enter")

    # The last turn reports a prompt big enough that a summary is worth it (Gemini keeps the
    # history when its summary would not be smaller), and far under the automatic threshold.
    steps: list[Call | Say] = [Call("read_file", {"file_path": str(proj / "notes.txt")}),
                               Say("read it.", prompt_tokens=50_000), Say("on it.")]  # fmt: skip
    try:
        with Scripted(steps) as s:
            environ["GOOGLE_GEMINI_BASE_URL"] = s.base_url
            line = shlex.join(["env", *(f"{k}={v}" for k, v in environ.items()), "node",
                               str(CLI), "-m", "gemini-2.5-flash"])  # fmt: skip
            # The pane stays when Gemini exits, so a failure shows what it printed last.
            tmux("-f", "/dev/null", "start-server", ";", "set-option", "-g", "remain-on-exit",
                 "on", ";", "new-session", "-d", "-s", "g", "-x", "140", "-y", "45", "-c",
                 str(proj), line)  # fmt: skip
            try:
                typed("read notes.txt")
                _wait(lambda: len(s.turns()) == 2, 60, "the model's answer", screen)
                typed("/compress")
                _wait(lambda: any("Generate a new <state_snapshot>" in _texts(r["body"])
                                  for r in s.requests if r["body"].get("contents")), 60,
                      "Gemini's summary request", screen)  # fmt: skip
                typed("go on")
                after = _wait(lambda: s.turns()[2:3], 60, "the request after /compress", screen)
            finally:
                tmux("kill-server")
    finally:
        stop(store)
    said = _texts(after[0])
    _, found, table = said.partition(f"{SUMMARY}\n\n")  # the table right after the summary
    assert found, said[-1500:]
    assert table.startswith("## Files read before this summary\n"), said[-1500:]
    assert re.search(r"\| \S*notes\.txt \| 1-2 of 2 \| [0-9a-f]{8} \| #1000 \|", table), table
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT text, json_extract(data, '$.trigger') FROM events "
                          "WHERE kind = 'compaction'").fetchall()  # fmt: skip
    assert rows == [(SUMMARY, "manual")]
