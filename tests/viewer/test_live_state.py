"""Issue 10.5: a session is live while a writer is attached (its lease), in the store, the list
and the header; a writer closing or killed ends it; a retitle reaches the header; `ctxview
follow` opens the viewer on the followed session (tmux), `--no-view` only writes."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static
from viewer_helpers import wait_for

from ctxview.engine.session import Session
from ctxview.store import Reader, Writer
from ctxview.viewer.app import CtxviewApp
from ctxview.viewer.screens.sessions import SessionsScreen

CTXVIEW = str(Path(sys.executable).with_name("ctxview"))


async def _state(store: Path, sid: str) -> tuple[bool, float | None]:
    async with await Reader.open(store) as reader:
        row = await reader.session(sid)
        assert row is not None
        return row.live, row.left_at


async def test_live_while_a_writer_is_attached_and_not_after(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    a = await Writer.open(store)
    s = await Session.start(a, tmp_path, title="t")
    assert (await _state(store, s.id))[0]
    # A second writer on the same session: the first one leaving does not end it.
    b = await Writer.open(store)
    resumed = await Session.resume(b, s.id)
    await resumed.insert("bash", {"command": "true"}, "ok")
    # b's lease is written by its renewing task, a moment later (a second on a loaded machine:
    # a fixed 50 rounds of 20 ms let a's close end the session first).
    deadline = time.monotonic() + 30
    while True:
        async with await Reader.open(store) as reader:
            row = await reader.session(s.id)
        if row is not None and row.lease_until and row.lease_until > a._lease_value:
            break
        assert time.monotonic() < deadline, "b's lease was never written"
        await asyncio.sleep(0.02)
    await a.close()
    assert (await _state(store, s.id))[0], "another writer still holds the session"
    before = time.time()
    await b.close()
    live, left = await _state(store, s.id)
    assert not live and left is not None and before - 1 <= left <= time.time()


def test_a_killed_writer_stops_being_live_when_its_lease_runs_out(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    code = f"""
import asyncio, sys
from ctxview.store import writer as w
w.LEASE_SECONDS, w.LEASE_RENEW = 3.0, 0.2
async def main():
    wr = await w.Writer.open({str(store)!r})
    await wr.create_session("k", next_rid=4096)
    print("ready", flush=True)
    await asyncio.sleep(60)
asyncio.run(main())
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        # Past the first lease: renewed, so still live. A 3 s lease renewed every 0.2 s: a loaded
        # machine may hold the child back for a while (a 1 s lease ran out at times).
        time.sleep(3.5)
        assert asyncio.run(_state(store, "k"))[0]
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        killed = time.time()
        # Not live once its last lease (renewed at the latest at the kill) has run out.
        time.sleep(3.2)
        live, left = asyncio.run(_state(store, "k"))
        assert not live and left is not None and left <= killed + 3.0
    finally:
        proc.kill()
        proc.wait()


async def test_the_list_and_the_header_follow_the_lease_and_a_retitle(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    writer = await Writer.open(store)
    s = await Session.start(writer, tmp_path, title="first title", session_id="s-live")
    await s.insert("bash", {"command": "true"}, "ok")
    app = CtxviewApp(store)
    async with app.run_test(size=(120, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        table = screen.query_one(DataTable)
        await wait_for(pilot, lambda: screen.session_ids == ["s-live"])
        state = [c[0] for c in screen._columns].index("state")
        assert str(table.get_row("s-live")[state]) == "live"
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(app.screen, "session_id", None) == "s-live")
        title = app.screen.query_one("#transcript-title", Static)
        await wait_for(pilot, lambda: "first title" in str(title.render()))
        assert str(title.render()).endswith("· live")
        await writer.update_session("s-live", title="a new title")
        await wait_for(pilot, lambda: "a new title" in str(title.render()))
        await writer.close()  # the writer leaves: not live any more, and says since when
        await wait_for(pilot, lambda: str(title.render()).endswith("· not live: no writer"))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await wait_for(pilot, lambda: str(table.get_row("s-live")[state]) == "ended")
        assert "0 live" in screen.sub_title


def _transcript(path: Path, lines: int, first: int = 0) -> None:
    """A small Claude Code transcript of `lines` user/assistant records, numbered from `first`."""
    with path.open("a") as f:
        for n in range(first, first + lines):
            role = "user" if n % 2 == 0 else "assistant"
            content = (f"message {n}" if role == "user"
                       else [{"type": "text", "text": f"answer {n}"}])  # fmt: skip
            rec = {"type": role, "sessionId": "follow-1", "uuid": f"u{n}-{time.time()}",
                   "timestamp": "2026-11-30T10:00:00Z", "cwd": str(path.parent),
                   "message": {"role": role, "content": content}}  # fmt: skip
            f.write(json.dumps(rec) + "\n")


def test_follow_no_view_only_writes_and_leaves_the_session_not_live(tmp_path: Path) -> None:
    transcript = tmp_path / "follow-1.jsonl"
    _transcript(transcript, 2)
    store = tmp_path / "store.db"
    proc = subprocess.Popen([CTXVIEW, "--store", str(store), "follow", str(transcript),
                             "--no-view"], stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("Following ")
        said = proc.stderr.readline()
        assert said.startswith("+2 lines (") and " bytes) → " in said
        _transcript(transcript, 1, 2)
        assert proc.stderr.readline().startswith("+1 line (")  # singular
        sid = said.rsplit("→ ", 1)[1].strip()
        assert asyncio.run(_state(store, sid))[0]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
    finally:
        proc.kill()
    assert not asyncio.run(_state(store, sid))[0]


TMUX = shutil.which("tmux")


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")
def test_follow_opens_the_viewer_on_the_followed_session(tmp_path: Path) -> None:
    transcript = tmp_path / "follow-1.jsonl"
    _transcript(transcript, 2)
    store = tmp_path / "store.db"
    name = f"ctxview-follow-{os.getpid()}"
    env = {**os.environ, "TERM": "xterm-256color"}
    tmux = [TMUX, "-L", name]
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", "-s", name, CTXVIEW,
                    "--store", str(store), "follow", str(transcript)], check=True, env=env)  # fmt: skip

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", name], capture_output=True,
                              text=True).stdout  # fmt: skip

    def wait(check, what: str, timeout: float = 20) -> None:  # type: ignore[no-untyped-def]
        end = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < end, f"{what}: {screen()}"
            time.sleep(0.1)

    try:
        wait(lambda: "answer 1" in screen() and "· live" in screen(), "the followed session")
        _transcript(transcript, 2, 2)
        wait(lambda: "message 2" in screen() and "answer 3" in screen(), "the new records")
        subprocess.run([*tmux, "send-keys", "-t", name, "q"], check=True)
        wait(lambda: subprocess.run([*tmux, "has-session", "-t", name],
                                    capture_output=True).returncode != 0, "quit")  # fmt: skip
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    with Reader_sync(store) as rows:
        assert rows and not any(r[1] for r in rows), "quitting stopped the follow: not live"


class Reader_sync:
    """(id, live) of every session, read with plain sqlite3 after the app is gone."""

    def __init__(self, store: Path) -> None:
        self.store = store

    def __enter__(self) -> list[tuple[str, bool]]:
        async def read() -> list[tuple[str, bool]]:
            async with await Reader.open(self.store) as reader:
                return [(s.id, s.live) for s in await reader.sessions()]

        return asyncio.run(read())

    def __exit__(self, *exc: object) -> None:
        return None
