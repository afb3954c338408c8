"""Codex itself (@openai/codex 0.169.0, from tests/agents/codex's lockfile) working through
`ctxview mcp --tools all`, installed by `codex_install` into its CODEX_HOME, with its own shell
tool off, against a scripted Responses API on loopback. The scripted model reads a file twice,
greps twice and recalls the first read; the requests Codex sends carry the 3.0.0 texts."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from codex_helpers import CODEX as CODEX
from codex_helpers import PROVIDER, codex_env, exec_codex, needs_codex
from fake_openai import Call, Say, Scripted, tool_outputs

from ctxview.agents.codex import install as codex_install

pytestmark = needs_codex


def _sessions(store: Path) -> list[tuple[str, str, float | None, str | None]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute("SELECT id, source, ended, source_path FROM sessions").fetchall()
    finally:
        conn.close()


def _shown(store: Path, sid: str) -> dict[int, str]:
    conn = sqlite3.connect(store)
    try:
        rows = conn.execute("SELECT rid, shown FROM bodies WHERE session = ?", (sid,)).fetchall()
    finally:
        conn.close()
    return dict(rows)


_codex_env = codex_env  # the name test_codex_tools and test_codex_told import


def test_codex_gets_the_rules_through_ctxview_mcp(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    (ws / "src").mkdir(parents=True)
    (ws / "hello.txt").write_text("alpha\nbeta\ngamma\n")
    (ws / "src" / "app.py").write_text("def beta():\n    return 2\n")
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    store = tmp_path / "store.db"
    script = [
        Call("read", {"path": "hello.txt"}, server="ctxview"),
        Call("read", {"path": "hello.txt"}, server="ctxview"),
        Call("grep", {"pattern": "beta"}, server="ctxview"),
        Call("grep", {"pattern": "beta"}, server="ctxview"),
        Call("recall", {"id": "#1000"}, server="ctxview"),
        Say("All done."),
    ]
    with Scripted(script) as model:
        (codex_home / "config.toml").write_text(PROVIDER.format(base_url=model.base_url))
        plan = codex_install.install(codex_home, store=store)
        plan.write()
        assert len(plan.changes) == 2
        done = exec_codex(ws, codex_env(home, codex_home), "Read hello.txt and look for beta.")
        requests = list(model.requests)
    assert done.returncode == 0, done.stderr[-3000:]
    assert model.spent, f"Codex stopped after {len(requests)} requests: {done.stderr[-3000:]}"

    # What Codex offered its model: ctxview's ten tools, and no shell of its own.
    offered = requests[0]["tools"]
    names = {t.get("name") for t in offered}
    assert "exec_command" not in names and "shell" not in names
    space = next(t for t in offered if t.get("name") == "mcp__ctxview")
    assert {t["name"] for t in space["tools"]} == {
        "read", "write", "edit", "multiedit", "apply_patch", "list", "glob", "grep", "bash",
        "recall",
    }  # fmt: skip

    # The server's instructions (spec §9's block, and to use its tools) reach the model: Codex
    # gives them as the description of the server's namespace.
    told = space["description"]
    assert "Unchanged re-reads" in told and "rather than the host's own tools" in told

    # Each request carries the answer to the call before it, as ctxview shaped it.
    got = [tool_outputs(requests[i])[f"call_{i}"] for i in range(1, 6)]
    sha = re.search(r"\[#1000 hello\.txt lines 1-3 of 3 sha ([0-9a-f]{8})\]", got[0])
    assert sha, got[0]
    assert got[0].endswith(f"[#1000 hello.txt lines 1-3 of 3 sha {sha[1]}]\n"
                           "1: alpha\n2: beta\n3: gamma")  # fmt: skip
    assert got[1].endswith(f"[#1001 hello.txt lines 1-3 of 3 sha {sha[1]}] Unchanged since "
                           "#1000, which already shows lines 1-3.")  # fmt: skip
    assert got[2].endswith("[#1002]\nhello.txt:2: beta\nsrc/app.py:1: def beta():")
    assert got[3].endswith("[#1003] Same result as #1002.")
    assert got[4].endswith("[#1004 recall #1000 lines 1-3 of 3]\n1: alpha\n2: beta\n3: gamma")

    # One store session, Codex's own id, holding those texts, ended when Codex closed it.
    thread = re.search(r"session id: ([0-9a-f-]+)", done.stdout + done.stderr)
    assert thread, done.stderr[-2000:]
    deadline = time.monotonic() + 60  # a bound for a loaded machine; it returns once ended
    while (rows := _sessions(store)) and rows[0][2] is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [(sid, source) for sid, source, _, _ in rows] == [(f"cx-{thread[1]}", "codex")]
    # Named after Codex's rollout file, where an import of it looks for its session.
    rollout = next((codex_home / "sessions").glob(f"*/*/*/rollout-*-{thread[1]}.jsonl"))
    assert rows[0][3] == str(rollout.resolve())
    assert rows[0][2] is not None, "the session is still live after Codex exited"
    shown = _shown(store, rows[0][0])
    assert sorted(shown) == [0x1000, 0x1001, 0x1002, 0x1003, 0x1004]
    for i, rid in enumerate(sorted(shown)):
        assert got[i].endswith(shown[rid])

    # An import of Codex's rollout lands in that session and adds its messages, never a second
    # copy of the results under other ids.
    imported = subprocess.run(
        [sys.executable, "-m", "ctxview.cli", "--store", str(store), "import",
         str(rollout)], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert [r[0] for r in _sessions(store)] == [rows[0][0]]
    assert _shown(store, rows[0][0]) == shown
    conn = sqlite3.connect(store)
    said = conn.execute("SELECT text FROM events WHERE kind = 'message' AND role = 'assistant'"
                        " AND text != ''").fetchall()  # fmt: skip
    conn.close()
    assert ("All done.",) in said
