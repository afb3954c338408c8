"""An independent MCP client: a short Node script on @modelcontextprotocol/sdk 1.32.2 (from
tests/agents/codex's lockfile) starts `ctxview mcp` over stdio, lists its tools and calls
recall on a stored result."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxview.engine.session import Session
from ctxview.store import Writer

HERE = Path(__file__).parent / "codex"
SDK = HERE / "node_modules" / "@modelcontextprotocol" / "sdk"

pytestmark = pytest.mark.skipif(
    not SDK.exists() or shutil.which("node") is None,
    reason="node or @modelcontextprotocol/sdk is absent: run `npm ci` in tests/agents/codex "
    "(.ci/run does)",
)


async def test_node_sdk_lists_the_tools_and_recalls(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "notes.md").write_text("one\ntwo\nthree\n")
    store = tmp_path / "store.db"
    async with await Writer.open(store) as w:
        session = await Session.start(w, ws, title="stored before")
        await session.run("read", {"path": "notes.md"})
    env = {**os.environ, "CTXVIEW_SESSION": session.id, "RECALL_ID": "#1000"}
    done = subprocess.run(
        ["node", str(HERE / "mcp_client.mjs"), sys.executable, "-m", "ctxview.cli",
         "--store", str(store), "mcp", "--tools", "all"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["tools"] == ["read", "write", "edit", "multiedit", "apply_patch", "list", "glob",
                            "grep", "bash", "recall"]  # fmt: skip
    assert out["recall"]["content"] == [
        {"type": "text", "text": "[#1001 recall #1000 lines 1-3 of 3]\n1: one\n2: two\n3: three"}
    ]
    assert not out["recall"].get("isError")
