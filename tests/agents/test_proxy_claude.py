"""The real Claude Code through `ctxview run`: every request the scripted Messages API received
is in the store exactly (JSON-equal), in the session Claude Code names (`cc-<id>`), and the
viewer's reader rebuilds it from the shared rows."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from claude_helpers import CLAUDE, CTXVIEW, Project, needs_claude
from fake_anthropic import FakeAnthropic

pytestmark = needs_claude


def _canon(body: Any) -> str:
    return json.dumps(body, sort_keys=True)


def _run_claude(p: Project, upstream: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(CTXVIEW), "run", "--upstream", upstream, "--", str(CLAUDE), "-p", *args,
         "--output-format", "json", "--allowedTools", "Read,Bash,Edit,Write"],
        cwd=p.root, env=p.env("http://127.0.0.1:9/not-used"), capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


def _requests(p: Project, sid: str) -> list[dict[str, Any]]:
    out = p.ctxview("requests", sid, "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_every_request_claude_code_sent_is_stored_exactly(tmp_path: Path) -> None:
    p = Project(tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db")
    p.root.mkdir()
    p.home.mkdir()
    (p.root / "hello.txt").write_text("line one\nline two\n")
    steps = [
        {"tool": "Read", "input": {"file_path": str(p.root / "hello.txt")}},
        {"tool": "Bash", "input": {"command": "echo hi", "description": "echo"}},
        {"text": "All done."},
        {"tool": "Bash", "input": {"command": "echo again", "description": "echo"}},
        {"text": "Second done."},
    ]
    with FakeAnthropic(steps) as server:
        sid = _run_claude(p, server.url, "read hello then echo")["session_id"]
        _run_claude(p, server.url, "echo again", "--resume", sid)
        sent = list(server.requests)
    assert len(sent) >= 5
    got = _requests(p, f"cc-{sid}")
    messages = [r for r in got if r["protocol"] == "anthropic-messages"]
    assert sorted(map(_canon, (r["body"] for r in messages))) == sorted(map(_canon, sent))
    for r in messages:
        assert r["outcome"] == "complete", r
        assert r["status"] == 200
        assert r["response"]["stop_reason"] in ("end_turn", "tool_use")
        assert r["usage"]["output_tokens"] == 20
        names = {k.lower(): v for k, v in r["request_headers"]}
        assert names["x-api-key"] == "[not kept]"
        assert names["x-claude-code-session-id"] == sid
    # The key never reaches the store, in any table.
    raw = (p.store).read_bytes() + Path(f"{p.store}-wal").read_bytes() if Path(
        f"{p.store}-wal").exists() else p.store.read_bytes()  # fmt: skip
    assert b"test-key" not in raw
    # Messages are stored once: fewer blobs than messages sent over all requests.
    conn = sqlite3.connect(p.store)
    blobs = conn.execute("SELECT count(*) FROM api_blobs").fetchone()[0]
    assert blobs < sum(len(b["messages"]) for b in sent)
    shapes = conn.execute("SELECT count(*) FROM api_shapes").fetchone()[0]
    assert shapes < len(sent)
    row = conn.execute("SELECT source FROM sessions WHERE id = ?", (f"cc-{sid}",)).fetchone()
    assert row is not None


def test_hooks_beside_the_proxy_make_one_session(tmp_path: Path) -> None:
    """`ctxview install claude-code` and `ctxview run` together: the hooks' events and the
    proxy's records land in one store session, `cc-<id>`, not two."""
    from claude_helpers import project

    with project(tmp_path) as p:
        assert p.ctxview("install", "claude-code").returncode == 0
        (p.root / "hello.txt").write_text("line one\n")
        steps = [{"tool": "Bash", "input": {"command": "cat hello.txt", "description": "cat"}},
                 {"text": "Done."}]  # fmt: skip
        with FakeAnthropic(steps) as server:
            sid = _run_claude(p, server.url, "cat hello")["session_id"]
            sent = list(server.requests)
        # `ctxview requests` lists each request once, though the hooks imported Claude Code's
        # own record of the same requests into the session too.
        got = [r for r in _requests(p, f"cc-{sid}") if r["protocol"] == "anthropic-messages"]
        assert sorted(map(_canon, (r["body"] for r in got))) == sorted(map(_canon, sent))
        conn = sqlite3.connect(p.store)
        sessions = [r[0] for r in conn.execute("SELECT id FROM sessions")]
        assert sessions == [f"cc-{sid}"]
        results = conn.execute("SELECT count(*) FROM events WHERE session = ? AND kind = "
                               "'result'", (f"cc-{sid}",)).fetchone()[0]  # fmt: skip
        proxied = conn.execute("SELECT count(*) FROM proxy_records WHERE session = ?",
                               (f"cc-{sid}",)).fetchone()[0]  # fmt: skip
        assert results >= 1 and proxied >= 2
        own = conn.execute("SELECT count(*) FROM api_requests WHERE session = ? AND n < ?",
                           (f"cc-{sid}", 1 << 32)).fetchone()[0]  # fmt: skip
        assert own >= 1  # Claude Code's own records are there beside the proxy's
