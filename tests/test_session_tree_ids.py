"""One id space per session tree (a session and its sub-agents, `src/ctxview/store/tree.py`): a
sub-agent's ids come from its parent's counter, in memory and in the store, never twice, not
after a restart or a rolled-back import; recall, `ctxview recall`, `ctxview view --jump`, an
import of a transcript with its sub-agents and an export all find an id across the tree."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from ctxview.cli import main
from ctxview.commands import view as view_command
from ctxview.engine.session import Session
from ctxview.importers.follow import follow
from ctxview.importers.runner import import_file
from ctxview.store import Writer

FIXTURES = Path(__file__).parent / "fixtures" / "import"


def _rids(store: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute("SELECT session, rid FROM events WHERE rid IS NOT NULL "
                            "ORDER BY rid").fetchall()  # fmt: skip
    finally:
        conn.close()


async def test_a_sub_agent_takes_its_ids_from_its_parents_counter(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    async with await Writer.open(store) as writer:
        parent = await Session.start(writer, tmp_path, session_id="p")
        assert (await parent.insert("bash", {}, "one")).startswith("[#1000]")
        child = await Session.start(writer, tmp_path, session_id="c", parent_session="p")
        assert (await child.insert("bash", {}, "two")).startswith("[#1001]")
        assert (await parent.insert("bash", {}, "three")).startswith("[#1002]")
        # A sub-agent of the sub-agent: the same tree.
        grand = await Session.start(writer, tmp_path, session_id="g", parent_session="c")
        assert (await grand.insert("bash", {}, "four")).startswith("[#1003]")
        await parent.compact("summary")
        assert (await child.insert("bash", {}, "five")).startswith("[#1004]")
        # Recall answers from whichever session of the tree holds the id.
        assert (
            await child.run("recall", {"id": "#1002"})
            == "[#1005 recall #1002 lines 1-1 of 1]\nthree"
        )
        assert (
            await parent.run("recall", {"id": "1003"})
            == "[#1006 recall #1003 lines 1-1 of 1]\nfour"
        )
        assert (
            await grand.run("recall", {"id": "#1004"})
            == "[#1007 recall #1004 lines 1-1 of 1]\nfive"
        )
    # A restart: every session of the tree carries on past every id the tree gave.
    async with await Writer.open(store) as writer:
        for sid, want in (("p", "[#1008]"), ("g", "[#1009]"), ("c", "[#100a]")):
            session = await Session.resume(writer, sid)
            assert (await session.insert("bash", {}, sid)).startswith(want)
    rids = [r for _, r in _rids(store)]
    assert rids == list(range(0x1000, 0x100B))


async def test_another_writer_of_the_tree_is_taken_in_through_the_store(tmp_path: Path) -> None:
    """Two processes (here two writers): the one that resumes or advances after the other wrote
    never gives an id the other gave."""
    store = tmp_path / "s.db"
    async with await Writer.open(store) as a, await Writer.open(store) as b:
        parent = await Session.start(a, tmp_path, session_id="p")
        await parent.insert("bash", {}, "one")
        child = await Session.start(b, tmp_path, session_id="c", parent_session="p")
        assert (await child.insert("bash", {}, "two")).startswith("[#1001]")
        parent.advance_ids(await a.tree_next_rid("p"))  # what the hook and the MCP server do
        assert (await parent.insert("bash", {}, "three")).startswith("[#1002]")


async def test_a_store_from_before_shared_ids_keeps_each_sessions_own_first(tmp_path: Path) -> None:
    """Made before ids were shared, a parent and its sub-agent both hold #1000: each session's
    recall finds its own, and new ids go past both."""
    store = tmp_path / "s.db"
    async with await Writer.open(store) as writer:
        parent = await Session.start(writer, tmp_path, session_id="p")
        await parent.insert("bash", {}, "parent's")
        await writer.create_session("c", workspace=str(tmp_path), next_rid=0x1000,
                                    parent_session="p")  # fmt: skip
        child = await Session.resume(writer, "c")
        child.ids.rewind(0x1000)  # as an older ctxview would have numbered it
        await child.insert("bash", {}, "child's")
        child = await Session.resume(writer, "c")
        assert (await child.run("recall", {"id": "#1000"})).endswith("\nchild's")
        parent = await Session.resume(writer, "p")
        assert (await parent.run("recall", {"id": "#1000"})).startswith("[#1002 recall #1000")


async def test_a_rolled_back_import_gives_its_ids_again(tmp_path: Path) -> None:
    """The ids a failed step took in memory go back (the tree's counter is shared in memory):
    the rerun numbers as one clean import does, with no gap."""
    store = tmp_path / "s.db"
    async with await Writer.open(store) as writer:
        session = await Session.start(writer, tmp_path, session_id="p")
        with pytest.raises(RuntimeError):
            async with writer.transaction():
                await session.insert("bash", {}, "lost")
                raise RuntimeError("rolled back")
        assert session.ids.next == 0x1001  # taken in memory...
        session.ids.rewind(await writer.tree_next_rid("p"))  # ...given back, as the importer does
        assert (await session.insert("bash", {}, "kept")).startswith("[#1000]")


async def test_a_rewind_never_gives_back_an_id_another_step_took_after(tmp_path: Path) -> None:
    """The hook engine answers a call while its import of the last call's transcript is under
    way (claude_hooks: answers before store), both drawing on the tree's one counter: the call's
    events held (`held_calls.Held`, its own writer), the import's queued in its transaction. Whichever of
    the two fails and gives its ids back, it gives back only its own trailing ones: an id the
    other took after them is never given twice (a gap instead)."""
    from ctxview.agents.claude_code.held_calls import Held

    store = tmp_path / "s.db"
    async with await Writer.open(store) as writer:
        await Session.start(writer, tmp_path, session_id="p")
        hook = await Session.resume(writer, "p")  # the engine's own Session of the session
        imp = await Session.resume(writer, "p")  # the import's
        child = await Session.start(writer, tmp_path, session_id="c", parent_session="p")

        # 1. The import's chunk takes an id, a call's step takes the next, the chunk rolls back.
        held = Held(writer)
        with pytest.raises(RuntimeError):
            async with writer.batch(), writer.transaction():
                await imp.insert("bash", {}, "imported, rolled back")  # #1000, queued
                hook.writer = held  # type: ignore[assignment]
                answered = await hook.insert("bash", {}, "answered")  # #1001, to the model
                hook.writer = writer
                raise RuntimeError("the import's chunk rolled back")
        assert answered.startswith("[#1001]")
        imp.ids.rewind(await writer.tree_next_rid("p"), owner=imp.writer)  # as the importer does
        for sid, events, bodies, fts in held.steps:  # the answered call's events, stored
            await writer.append(sid, events, bodies, fts_max_chars=fts)
        assert (await imp.insert("bash", {}, "imported again")).startswith("[#1002]")

        # 2. The import takes an id (queued), a call's step (a sub-agent's) takes the next and
        # fails before its answer: it gives back its own id only.
        async with writer.batch(), writer.transaction():
            assert (await imp.insert("bash", {}, "imported")).startswith("[#1003]")
            failed = Held(writer)
            child.writer = failed  # type: ignore[assignment]
            assert (await child.insert("bash", {}, "never answered")).startswith("[#1004]")
            child.writer = writer
            child.ids.rewind(await writer.tree_next_rid("c"), owner=failed)  # as the engine does
            assert child.ids.next == 0x1004
        assert (await child.insert("bash", {}, "answered")).startswith("[#1004]")
    rids = [rid for _, rid in _rids(store)]
    assert rids == sorted(set(rids)) == [0x1001, 0x1002, 0x1003, 0x1004], rids


async def test_an_import_of_a_session_and_its_sub_agent_shares_one_id_space(tmp_path: Path) -> None:
    project = FIXTURES / "project"
    agent = next(project.rglob("agent-a1b2c3d.jsonl"))
    main_file = next(project.glob("*.jsonl"))
    for order in ((main_file, agent), (agent, main_file)):
        store = tmp_path / f"{order[0].stem}.db"
        async with await Writer.open(store) as writer:
            for f in order:
                await import_file(writer, f)
        rows = _rids(store)
        rids = [r for _, r in rows]
        assert len(rids) == len(set(rids)), rows
        assert {s for s, _ in rows} == {f"cc-{main_file.stem}", "cc-a1b2c3d"}


async def test_follow_of_a_growing_session_and_its_sub_agent_shares_one_id_space(
    tmp_path: Path,
) -> None:
    """Followed, the parent's and the sub-agent's files grow in turns, each with its own
    importer: their results still never share an id."""
    project = FIXTURES / "project"
    agent_src = next(project.rglob("agent-a1b2c3d.jsonl"))
    main_src = next(project.glob("*.jsonl"))
    lines = main_src.read_bytes().splitlines(keepends=True)
    src, store = tmp_path / main_src.name, tmp_path / "s.db"
    src.write_bytes(b"".join(lines[:11]))
    async with await Writer.open(store) as writer:
        stop = asyncio.Event()
        task = asyncio.create_task(follow(writer, src, stop=stop, poll=0.05))
        try:
            await _until(store, 1)
            folder = tmp_path / main_src.stem / "subagents"
            folder.mkdir(parents=True)
            shutil.copy(agent_src, folder / agent_src.name)
            await _until(store, 2)
            with src.open("ab") as f:
                f.write(b"".join(lines[11:]))
            await _until(store, len(_rids(store)) + 1)
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
    rows = _rids(store)
    rids = [r for _, r in rows]
    assert len(rids) == len(set(rids)) and len({s for s, _ in rows}) == 2, rows


async def _until(store: Path, n: int) -> None:
    for _ in range(1200):
        if store.exists() and len(_rids(store)) >= n:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"fewer than {n} results in {store}")


async def _tree(store: Path, tmp_path: Path) -> None:
    async with await Writer.open(store) as writer:
        parent = await Session.start(writer, tmp_path, session_id="cc-top", title="top")
        await parent.insert("bash", {"command": "echo top"}, "top's output", call_ref="t1")
        child = await Session.start(writer, tmp_path, session_id="cc-agent", title="agent",
                                    parent_session="cc-top", parent_call="t1")  # fmt: skip
        await child.insert("bash", {"command": "seq"}, "\n".join(map(str, range(1, 501))))
        await child.run("recall", {"id": "#1000"})
        await parent.run("recall", {"id": "#1001", "limit": 3})


async def test_ctxview_recall_and_view_jump_find_an_id_across_the_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    await _tree(store, tmp_path)
    capsys.readouterr()
    # From the top session (the default), the sub-agent's id; from the sub-agent, the top's.
    assert await asyncio.to_thread(main, ["--store", str(store), "recall", "#1001",
                                          "--limit", "2"]) == 0  # fmt: skip
    assert capsys.readouterr().out == "1\n2\n"
    assert await asyncio.to_thread(main, ["--store", str(store), "recall", "--session",
                                          "cc-agent", "1000"]) == 0  # fmt: skip
    assert capsys.readouterr().out == "top's output\n"
    args = argparse.Namespace(store=str(store), session="cc-top", jump="#1001")
    assert await view_command._check(args) == "cc-agent"  # opens where the id is
    args = argparse.Namespace(store=str(store), session="cc-agent", jump="#1000")
    assert await view_command._check(args) == "cc-top"


async def test_an_export_links_a_sub_agents_recall_of_its_parents_id(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    await _tree(store, tmp_path)
    out = tmp_path / "tree.html"
    assert await asyncio.to_thread(main, ["--store", str(store), "export", "cc-top", "-o",
                                          str(out)]) == 0  # fmt: skip
    html = out.read_text(encoding="utf-8")
    anchors = set(re.findall(r' id="([^"]+)"', html))
    # The sub-agent's recall of #1000 links the top session's result, which is there.
    assert re.search(r'recall <a class="id" href="#1000">#1000</a>', html)
    assert re.search(r'recall <a class="id" href="#a1-1001">#1001</a>', html)
    for target in re.findall(r'href="#([^"]+)"', html):
        assert target in anchors, target
    md = tmp_path / "tree.md"
    assert await asyncio.to_thread(main, ["--store", str(store), "export", "cc-top", "--format",
                                          "md", "-o", str(md)]) == 0  # fmt: skip
    text = md.read_text(encoding="utf-8")
    assert "recall [#1000](#r-1000)" in text and "recall [#1001](#r-a1-1001)" in text


def test_the_tree_is_the_sessions_parent_links(tmp_path: Path) -> None:
    from ctxview.store import tree

    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session TEXT, next_rid INTEGER);"
        "CREATE TABLE events (session TEXT, rid INTEGER, kind TEXT, call_ref TEXT);"
        "INSERT INTO sessions VALUES ('a', NULL, 4100), ('b', 'a', 4200), ('c', 'b', 4150),"
        "('x', 'y', 5000), ('loop1', 'loop2', 1), ('loop2', 'loop1', 2);"
    )
    assert tree.root_of(conn, "c") == "a" and tree.root_of(conn, "x") == "y"
    assert tree.next_rid(conn, "a") == 4200 and tree.next_rid(conn, "y") == 5000
    assert sorted(tree.members(conn, "a")) == ["a", "b", "c"]
    assert tree.root_of(conn, "loop1") in ("loop1", "loop2")  # a cycle ends, never hangs
    assert json.dumps(tree.members(conn, "nobody")) == '["nobody"]'
