"""`ctxview export FILE.jsonl` brings the session's sub-agents as `ctxview import` then export
does (issue 16 §3.5): a Claude Code session whose sub-agent is in `<session>/subagents/` (2.1.x)
or beside it as `agent-<id>.jsonl` naming the session (2.0.x), exported straight from its file,
holds the sub-agent, in HTML, Markdown and JSON; and the same bytes as the two steps."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "import" / "project"
SESSION = "11111111-2222-3333-4444-555555555555"
CLI = [sys.executable, "-m", "ctxview.cli"]
STAMP = re.compile(r'Exported by ctxview on [0-9: -]+UTC|"exported":[0-9.]+')


def ctxview(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "temp").mkdir()
    return {**os.environ, "CTXVIEW_STORE": str(tmp_path / "default.db"),
            "TMPDIR": str(tmp_path / "temp")}  # fmt: skip


def layout_2_0(tmp_path: Path) -> Path:
    """The same session as Claude Code 2.0 wrote it: the sub-agent's file beside the session's,
    every record naming the session."""
    folder = tmp_path / "project-2.0"
    folder.mkdir()
    shutil.copy(FIXTURES / f"{SESSION}.jsonl", folder)
    agent = FIXTURES / SESSION / "subagents" / "agent-a1b2c3d.jsonl"
    lines = [json.loads(x) for x in agent.read_text().splitlines() if x.strip()]
    for rec in lines:
        rec["sessionId"] = SESSION
    (folder / "agent-a1b2c3d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    # Another session's sub-agent beside it is not this session's.
    other = [{**r, "sessionId": "99999999-0000-0000-0000-000000000000"} for r in lines]
    (folder / "agent-ffff0000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in other))
    return folder / f"{SESSION}.jsonl"


@pytest.mark.parametrize("layout", ["2.1", "2.0"])
@pytest.mark.parametrize("fmt", ["html", "md", "json"])
def test_a_transcript_brings_its_sub_agents(tmp_path: Path, env: dict[str, str], fmt: str,
                                            layout: str) -> None:  # fmt: skip
    src = FIXTURES / f"{SESSION}.jsonl" if layout == "2.1" else layout_2_0(tmp_path)
    direct = tmp_path / "direct"
    ctxview("export", str(src), "--format", fmt, "-o", str(direct), cwd=tmp_path, env=env)
    text = direct.read_text(encoding="utf-8")
    if fmt == "json":
        first = json.loads(text.split("\n", 1)[0])
        assert len(first["sessions"]) == 2, first["sessions"]  # the session and its sub-agent
        assert any("a1b2c3d" in s for s in first["sessions"])
    elif fmt == "html":
        assert text.count('<details class="agent"') == 1
    else:
        assert "sub-agent 1:" in text
    # The same as importing the folder first, then exporting the session.
    store = str(tmp_path / "two.db")
    if layout == "2.1":
        ctxview("import", "--store", store, str(FIXTURES), cwd=tmp_path, env=env)
    else:
        ctxview("import", "--store", store, str(src), str(src.with_name("agent-a1b2c3d.jsonl")),
                cwd=tmp_path, env=env)  # fmt: skip
    two = tmp_path / "two"
    ctxview("export", "--store", store, f"cc-{SESSION}", "--format", fmt, "-o", str(two),
            cwd=tmp_path, env=env)  # fmt: skip
    assert STAMP.sub("", text) == STAMP.sub("", two.read_text(encoding="utf-8"))
    assert not (tmp_path / "default.db").exists()
    assert list((tmp_path / "temp").iterdir()) == []
