"""`ctxview mcp` as a real process over stdio, driven by the MCP Python SDK's own client: the
tools it lists, the 3.0.0 texts its answers carry, the store session it keeps live while the
connection lasts, and the hooked Claude Code session it shares with the hooks."""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_stdio import RawMcp

from ctxview.agents import live
from ctxview.engine.session import TOOLS, Session
from ctxview.store import Writer

CTXVIEW = [sys.executable, "-m", "ctxview.cli"]


def _params(ws: Path, store: Path, *args: str, env: dict[str, str] | None = None
            ) -> StdioServerParameters:  # fmt: skip
    return StdioServerParameters(
        command=CTXVIEW[0], args=[*CTXVIEW[1:], "--store", str(store), "mcp", *args],
        cwd=str(ws), env=env or {},
    )  # fmt: skip


def _sessions(store: Path) -> list[tuple[str, str, float | None]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute("SELECT id, source, ended FROM sessions ORDER BY id").fetchall()
    finally:
        conn.close()


def _results(store: Path, sid: str) -> list[tuple[int, str | None]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(
            "SELECT rid, call_ref FROM events WHERE session = ? AND kind = 'result' ORDER BY seq",
            (sid,),
        ).fetchall()
    finally:
        conn.close()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "hello.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "src" / "app.py").write_text("def beta():\n    return 2\n")
    return root


async def test_the_whole_set_over_stdio(ws: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    async with Client(_params(ws, store, "--tools", "all")) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == list(TOOLS)
        assert "Unchanged re-reads" in (client.instructions or "")  # spec §9's block
        assert "rather than the host's own tools" in (client.instructions or "")

        async def call(tool: str, **args: object) -> str:
            result = await client.call_tool(tool, args)
            assert not result.is_error
            assert result.structured_content is None  # plain text, as the rules shaped it
            return result.content[0].text  # type: ignore[union-attr]

        first = await call("read", path="hello.txt")
        sha = first.split(" sha ")[1][:8]
        assert first == f"[#1000 hello.txt lines 1-3 of 3 sha {sha}]\n1: alpha\n2: beta\n3: gamma"
        assert await call("read", path="hello.txt") == (
            f"[#1001 hello.txt lines 1-3 of 3 sha {sha}] Unchanged since #1000, which already "
            "shows lines 1-3."
        )
        assert await call("grep", pattern="beta") == (
            "[#1002]\nhello.txt:2: beta\nsrc/app.py:1: def beta():"
        )
        assert await call("grep", pattern="beta") == "[#1003] Same result as #1002."
        assert await call("recall", id="#1000") == (
            "[#1004 recall #1000 lines 1-3 of 3]\n1: alpha\n2: beta\n3: gamma"
        )
        assert (
            await call("recall", id="ffff")
        ) == "[#1005] No stored result #ffff in this session."
        edited = await call("edit", path="hello.txt", old_string="beta", new_string="BETA")
        assert edited.startswith("[#1006 hello.txt") and "-beta\n+BETA" in edited
        ran = await call("bash", command="seq 1 1000")
        assert ran.startswith("[#1007]\n1\n") and "lines elided, full output #1007]" in ran
        assert (await call("read", path="../outside.txt")).startswith("[#1008] ")
        # One session of this connection's own, live while it lasts.
        rows = _sessions(store)
        assert len(rows) == 1 and rows[0][0].startswith("mcp-") and rows[0][2] is None
    rows = _sessions(store)
    assert len(rows) == 1 and rows[0][2] is not None, "the session did not end with the connection"
    assert [rid for rid, _ in _results(store, rows[0][0])] == list(range(0x1000, 0x1009))
    assert (ws / "hello.txt").read_text() == "alpha\nBETA\ngamma\n"


async def test_codex_calls_land_in_its_own_session(ws: Path, tmp_path: Path) -> None:
    """Codex puts its thread id in each call's `_meta` (measured with 0.169.0), and its call id:
    the session is `cx-<thread>`, the id `ctxview import` gives Codex's rollout, and each result
    carries Codex's call id so an import can pair them."""
    store = tmp_path / "store.db"
    meta = {"sessionId": "t-1", "threadId": "t-1", "x-codex-turn-metadata": {"turn_id": "u"}}
    async with Client(_params(ws, store, "--tools", "all")) as client:
        await client.call_tool("read", {"path": "hello.txt"}, meta={**meta, "callId": "call_7"})
        await client.call_tool("list", {}, meta={**meta, "callId": "call_8"})
    assert [(sid, source) for sid, source, _ in _sessions(store)] == [("cx-t-1", "codex")]
    assert _results(store, "cx-t-1") == [(0x1000, "call_7"), (0x1001, "call_8")]
    assert _sessions(store)[0][2] is not None


async def test_recall_in_the_hooked_claude_code_session(ws: Path, tmp_path: Path) -> None:
    """The contract of agents/__init__.py: started by Claude Code (CLAUDE_CODE_SESSION_ID set),
    recall reads the hooked session `cc-<id>` and records its result there, under the session's
    lock; a hook's write between two calls is seen (ids go on after it, never twice); and the
    session stays live when the connection closes (its SessionEnd hook ends it)."""
    store = tmp_path / "store.db"
    sid = "cc-5d1e"
    async with await Writer.open(store) as w:
        hooked = await Session.start(w, ws, session_id=sid, source=live.CLAUDE,
                                     data=json.dumps({"hooked": True}))  # fmt: skip
        first = await hooked.run("read", {"path": "hello.txt"})
    env = {"CLAUDE_CODE_SESSION_ID": "5d1e"}
    async with Client(_params(ws, store, env=env)) as client:
        # Beside the hooks, the default set: recall only.
        assert [t.name for t in (await client.list_tools()).tools] == ["recall"]
        got = await client.call_tool("recall", {"id": "#1000"})
        assert got.content[0].text == (  # type: ignore[union-attr]
            "[#1001 recall #1000 lines 1-3 of 3]\n" + first.split("\n", 1)[1]
        )
        # The hook writes a result meanwhile, as it does: resumed from the store, under the lock.
        async with live.session_lock(store, sid), await Writer.open(store) as w:
            hook = await Session.resume(w, sid)
            assert await hook.insert("Bash", {"command": "echo hi"}, "hi") == "[#1002]\nhi"
        again = await client.call_tool("recall", {"id": "1002"})
        assert again.content[0].text == "[#1003 recall #1002 lines 1-1 of 1]\nhi"  # type: ignore[union-attr]
    assert _sessions(store) == [(sid, live.CLAUDE, None)]
    assert [rid for rid, _ in _results(store, sid)] == [0x1000, 0x1001, 0x1002, 0x1003]


def test_a_signal_ends_the_session(ws: Path, tmp_path: Path) -> None:
    """A host that stops its server with SIGTERM instead of closing stdin: still ended."""
    store = tmp_path / "store.db"
    mcp = RawMcp(store, ws)
    proc = mcp.proc
    try:
        mcp.initialize("raw-test")
        answer = mcp.call("read", {"path": "hello.txt"})
        assert answer["result"]["content"][0]["text"].startswith("[#1000 hello.txt lines 1-3")
        assert _sessions(store)[0][2] is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, proc.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 30  # a bound for a loaded machine; it returns once ended
    while _sessions(store)[0][2] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    ((sid, _, ended),) = _sessions(store)
    assert sid.startswith("mcp-") and ended is not None
