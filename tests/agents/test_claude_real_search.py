"""The real Claude Code (2.1.328, pinned) calling its own Grep and Glob under the hook (2.1.328
offers them when `--allowedTools` names them): what the model is sent is the 3.0.0 text — the
id, the cap with its elision line, the same-result stub — and the store holds exactly that."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import CLAUDE, Project, needs_claude, project, tool_results
from fake_anthropic import FakeAnthropic

pytestmark = [needs_claude, pytest.mark.e2e]


def _claude(p: Project, api_url: str, prompt: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(CLAUDE), "-p", prompt, "--output-format", "json",
         "--allowedTools", "Read,Bash,Grep,Glob,mcp__ctxview__recall"],
        cwd=p.root, env=p.env(api_url), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


def test_grep_and_glob_reach_the_model_capped_and_stubbed(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        src = p.root / "src"
        src.mkdir()
        for i in range(8):
            (src / f"m{i}.py").write_text(
                "".join(f"value_{i}_{j} = compute({j})\n" for j in range(100)))  # fmt: skip
        done = p.ctxview("install", "claude-code", "--project")
        assert done.returncode == 0, done.stderr
        content = {"pattern": "compute", "output_mode": "content", "-n": True, "head_limit": 0}
        steps = [
            {"tool": "Grep", "input": content},
            {"tool": "Grep", "input": content},
            {"tool": "Grep", "input": {"pattern": "value_3_"}},
            {"tool": "Glob", "input": {"pattern": "src/*.py"}},
            {"tool": "Glob", "input": {"pattern": "src/*.py"}},
            {"text": "Searched."},
        ]
        with FakeAnthropic(steps) as api:
            _claude(p, api.url, "search the code")
            last = api.main_requests[-1]
            offered = {t["name"] for t in api.main_requests[0]["tools"]}
        assert {"Grep", "Glob"} <= offered, offered
        got = tool_results(last)
        calls = sorted(got)
        assert len(calls) == 5, got
        grep1, grep2, names, glob1, glob2 = (got[c] for c in calls)
        # 800 matching lines: capped on the way in, the elision line naming the full result.
        assert grep1.startswith("[#1000]\n"), grep1[:200]
        assert "[500 lines elided, full output #1000]" in grep1
        assert grep2 == "[#1001] Same result as #1000."
        assert names.startswith("[#1002]\nFound 1 file") and "m3.py" in names
        lines = glob1.split("\n")
        assert lines[0] == "[#1003]" and len(lines) == 9 and all(".py" in x for x in lines[1:])
        assert glob2 == "[#1004] Same result as #1003."
        conn = sqlite3.connect(p.store)
        bodies = dict(conn.execute("SELECT rid, shown FROM bodies").fetchall())
        (full,) = conn.execute("SELECT stored FROM bodies WHERE rid = ?", (0x1000,)).fetchone()
        conn.close()
        for rid, text in zip(range(0x1000, 0x1005), (grep1, grep2, names, glob1, glob2),
                             strict=True):  # fmt: skip
            assert bodies[rid] == text, rid
        assert full.count("\n") + 1 == 800  # stored in full, before the cap
