"""Gemini CLI's sub-agents imported from their chat files: each one's session is a child of the
parent's, linked to the parent's own `invoke_agent` call that started it, two at once in one
turn included, whichever file is imported first."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gemini_subagent_files import AGENTS, CALLS, PARENT, write
from test_import_agents import run

from ctxview.importers.file_report import FileReport
from ctxview.importers.follow import RACY_NS, Folders, follow
from ctxview.store import Writer

LINKED = {f"gm-{agent}": (f"gm-{PARENT}", call) for agent, call in zip(AGENTS, CALLS, strict=True)}


def _links(store: Path) -> dict[str, tuple[str | None, str | None]]:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT id, parent_session, parent_call FROM sessions").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


@pytest.mark.parametrize("order", ["folder", "parent first", "agents first", "one each side"])
def test_each_sub_agent_is_linked_to_its_own_invoke_agent_call(order: str, tmp_path: Path) -> None:
    parent, agents = write(tmp_path / "tmp")
    store = tmp_path / "s.db"
    paths = {"folder": [tmp_path / "tmp"], "parent first": [parent, *agents],
             "agents first": [*agents, parent],
             "one each side": [agents[1], parent, agents[0]]}[order]  # fmt: skip
    for p in paths:
        code, _, err = run(store, "import", str(p))
        assert code == 0, err
    links = _links(store)
    assert links.pop(f"gm-{PARENT}") == (None, None)
    assert links == LINKED, links
    with sqlite3.connect(store) as db:  # each call is stored in the parent under that ref
        refs = {r[0] for r in db.execute("SELECT call_ref FROM events WHERE session = ?",
                                         (f"gm-{PARENT}",))}  # fmt: skip
    assert set(CALLS) <= refs, refs


async def _until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


async def test_a_follow_of_the_parent_takes_its_sub_agents_as_they_begin(tmp_path: Path) -> None:
    """`follow` of the parent's chat file alone: the sub-agent whose file is there is taken
    and linked, and so is one whose file (and folder) begins while the follow runs."""
    parent, agents = write(tmp_path / "tmp")
    later = agents[1].read_bytes()
    agents[1].unlink()
    agents[0].parent.rename(agents[0].parent.with_name("held"))  # no agents' folder at first
    store = tmp_path / "s.db"
    writer = await Writer.open(store)
    stop = asyncio.Event()
    task = asyncio.create_task(follow(writer, parent, stop=stop, poll=30.0))  # woken by writes
    try:
        await _until(lambda: f"gm-{PARENT}" in _links(store), "the parent stored")
        assert f"gm-{AGENTS[0]}" not in _links(store)
        agents[0].parent.with_name("held").rename(agents[0].parent)  # the first agent begins
        await _until(lambda: f"gm-{AGENTS[0]}" in _links(store), "the first agent stored")
        agents[1].write_bytes(later)  # the second begins in the folder there now
        await _until(lambda: len(_links(store)) == 3, "the second agent stored")
    finally:
        stop.set()
        await task
        await writer.close()
    links = _links(store)
    assert links.pop(f"gm-{PARENT}") == (None, None)
    assert links == LINKED, links


def test_a_folder_listed_in_the_tick_of_its_last_change_is_listed_again(tmp_path: Path) -> None:
    """A file made in the same tick of the filesystem's clock as the listing before it leaves
    the folder's mtime as it was: a listing that recent is not trusted; an older one is."""
    folders = Folders()
    (tmp_path / "a").write_text("")
    assert folders.entries(tmp_path) == [tmp_path / "a"]
    before = os.stat(tmp_path).st_mtime_ns
    (tmp_path / "b").write_text("")
    os.utime(tmp_path, ns=(before, before))  # b made in the listing's tick: the mtime as it was
    assert folders.entries(tmp_path) == [tmp_path / "a", tmp_path / "b"]
    old = before - 2 * RACY_NS - 1  # a folder that last changed long before its listing
    os.utime(tmp_path, ns=(old, old))
    assert folders.entries(tmp_path) == [tmp_path / "a", tmp_path / "b"]  # listed: mtime moved
    (tmp_path / "c").write_text("")
    os.utime(tmp_path, ns=(old, old))  # c added, the mtime as it was: the listing is trusted
    assert folders.entries(tmp_path) == [tmp_path / "a", tmp_path / "b"]
    assert Folders().entries(tmp_path / "a") == [] and Folders().entries(tmp_path / "x") == []


async def test_strangers_among_the_sub_agents_files_are_passed_over_once(tmp_path: Path) -> None:
    """A folder, a FIFO (nobody writes it) and a link to /dev/zero named as sub-agents' files:
    each is said once and passed over; the follow goes on and takes the real ones."""
    parent, agents = write(tmp_path / "tmp")
    folder = agents[0].parent
    (folder / "dir.jsonl").mkdir()
    os.mkfifo(folder / "fifo.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    store = tmp_path / "s.db"
    writer = await Writer.open(store)
    stop = asyncio.Event()
    reports: list[FileReport] = []
    task = asyncio.create_task(follow(writer, parent, stop=stop, poll=0.05,
                                      on_batch=reports.append))  # fmt: skip
    try:
        await _until(lambda: len(_links(store)) == 3, "the parent and its two agents")
        await asyncio.sleep(0.5)  # ten more rounds: none of the strangers is said again
        assert not task.done()
    finally:
        stop.set()
        await task
        await writer.close()
    said = sorted((Path(r.path).name, r.refused) for r in reports if r.refused)
    assert said == [("dir.jsonl", "is a folder, not a transcript."),
                    ("fifo.jsonl", "is not a regular file"),
                    ("zero.jsonl", "/dev/zero is not a regular file")], said  # fmt: skip
    assert _links(store) == {f"gm-{PARENT}": (None, None), **LINKED}


def test_the_workspace_is_the_project_gemini_names(tmp_path: Path) -> None:
    """Gemini's chat records name no folder; it writes the project's in `.project_root` of the
    project's folder under `~/.gemini/tmp/`, and a sub-agent's header lists its directories."""
    parent, _ = write(tmp_path / "tmp")
    (parent.parent.parent / ".project_root").write_text("/home/dev/shop")
    store = tmp_path / "s.db"
    assert run(store, "import", str(tmp_path / "tmp"))[0] == 0
    with sqlite3.connect(store) as db:
        spaces = dict(db.execute("SELECT id, workspace FROM sessions").fetchall())
    assert spaces == {f"gm-{PARENT}": "/home/dev/shop",
                      **{f"gm-{a}": "/work/demo" for a in AGENTS}}, spaces  # fmt: skip


def test_ctxview_follow_with_no_path_takes_the_newest_and_says_each_stranger_once(
    tmp_path: Path,
) -> None:
    """The command as a person types it, `ctxview follow --no-view` with no path, in a home
    whose newest session file is a Gemini chat: it follows that file and its sub-agents, and
    says on stderr once, for each stranger named like a sub-agent's file, that it passed it
    over and why."""
    home = tmp_path / "home"
    parent, agents = write(home / ".gemini" / "tmp")
    older = home / ".pi" / "agent" / "sessions" / "--proj--" / "2026-04-01T10-00-00_x.jsonl"
    older.parent.mkdir(parents=True)
    older.write_text("{}\n")
    os.utime(older, (1_000_000, 1_000_000))
    folder = agents[0].parent
    (folder / "dir.jsonl").mkdir()
    os.mkfifo(folder / "fifo.jsonl")
    store = tmp_path / "s.db"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONUNBUFFERED": "1",
           "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_STATE_HOME": str(home / ".local" / "state"),
           "XDG_CONFIG_HOME": str(home / ".config"), "CODEX_HOME": str(home / ".codex"),
           "CLAUDE_CONFIG_DIR": str(home / ".claude")}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "ctxview.cli", "follow", "--no-view",
                             "--store", str(store)],
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        asyncio.run(_until(lambda: store.exists() and len(_links(store)) == 3,
                           "the parent and its two agents"))  # fmt: skip
        time.sleep(0.5)  # more of the follow's rounds: nothing is said again
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"Following {parent}" in err, err
    assert err.count("Passed over") == 2, err
    assert f"Passed over {folder / 'dir.jsonl'}: is a folder, not a transcript." in err, err
    assert f"Passed over {folder / 'fifo.jsonl'}: is not a regular file" in err, err
    assert _links(store) == {f"gm-{PARENT}": (None, None), **LINKED}
