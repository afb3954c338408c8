"""`ctxview install claude-code` and `uninstall`, run as a person runs them: merged into what is
there, idempotent, every change printed, and undone exactly."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

CTXVIEW = Path(sys.executable).with_name("ctxview")

THEIRS = {
    "model": "opus",
    "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}],
    },
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
}
THEIR_MCP = {"mcpServers": {"other": {"command": "other-server", "args": []}}}


def ctxview(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("CTXVIEW_STORE", None)
    return subprocess.run([str(CTXVIEW), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_project_install_merges_is_idempotent_and_uninstall_restores(tmp_path: Path) -> None:
    proj, home = tmp_path / "proj", tmp_path / "home"
    (proj / ".claude").mkdir(parents=True)
    home.mkdir()
    settings, mcp = proj / ".claude" / "settings.json", proj / ".mcp.json"
    settings.write_text(json.dumps(THEIRS))
    mcp.write_text(json.dumps(THEIR_MCP))

    done = ctxview(proj, home, "install", "claude-code", "--project")
    assert done.returncode == 0, done.stderr
    for event in ("PostToolUse", "PostToolUseFailure", "SessionStart", "PreCompact", "Stop",
                  "SessionEnd", "UserPromptSubmit"):
        assert f"added the {event} hook to {settings}" in done.stdout
    assert f"added the MCP server ctxview (`ctxview mcp`) in {mcp}" in done.stdout
    s = json.loads(settings.read_text())
    assert s["model"] == "opus" and s["permissions"]["deny"] == ["Read(.env)"]
    assert s["permissions"]["allow"] == ["Bash(npm test)", "mcp__ctxview__recall"]
    assert s["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0] and len(s["hooks"]["Stop"]) == 2
    post = s["hooks"]["PostToolUse"]
    assert post[0] == THEIRS["hooks"]["PostToolUse"][0] and post[1]["matcher"] == "*"
    command = shlex.split(post[1]["hooks"][0]["command"])
    assert Path(command[0]).is_absolute() and Path(command[0]).exists()  # the installed ctxview
    assert command[1] == "-S" and command[3] == "post-tool-use"  # the lean start, by file
    assert command[2].endswith("backend/agents/hook_client.py") and Path(command[2]).exists()
    m = json.loads(mcp.read_text())
    assert m["mcpServers"]["other"] == THEIR_MCP["mcpServers"]["other"]
    server = m["mcpServers"]["ctxview"]
    assert Path(server["command"]).is_absolute() and server["args"] == ["mcp"]
    assert s["enabledMcpjsonServers"] == ["ctxview"]

    before = (settings.read_text(), mcp.read_text())
    again = ctxview(proj, home, "install", "claude-code")
    assert again.returncode == 0 and again.stdout == "claude-code: already set up, nothing changed.\n"
    assert (settings.read_text(), mcp.read_text()) == before

    gone = ctxview(proj, home, "uninstall", "claude-code", "--project")
    assert gone.returncode == 0 and "removed the PostToolUse hook" in gone.stdout
    assert json.loads(settings.read_text()) == THEIRS
    assert json.loads(mcp.read_text()) == THEIR_MCP
    nothing = ctxview(proj, home, "uninstall", "claude-code")
    assert nothing.stdout == "claude-code: nothing of ctxview's was there.\n"


def test_user_install_writes_the_users_files_and_leaves_no_trace(tmp_path: Path) -> None:
    proj, home = tmp_path / "proj", tmp_path / "home"
    proj.mkdir()
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3}))
    done = ctxview(proj, home, "--store", str(tmp_path / "s.db"), "install", "claude-code",
                   "--user")  # fmt: skip
    assert done.returncode == 0, done.stderr
    s = json.loads((home / ".claude" / "settings.json").read_text())
    command = s["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command.endswith(f"session-start --store {tmp_path / 's.db'}")
    user = json.loads((home / ".claude.json").read_text())
    assert user["numStartups"] == 3 and user["mcpServers"]["ctxview"]["args"][-2:] == [
        "--store", str(tmp_path / "s.db")]  # fmt: skip
    assert "enabledMcpjsonServers" not in s
    assert not (proj / ".claude").exists() and not (proj / ".mcp.json").exists()
    doctor = ctxview(proj, home, "--store", str(tmp_path / "s.db"), "doctor")
    assert "claude code (user" in doctor.stdout and "hooks PostToolUse, PostToolUseFailure, SessionStart" in (
        doctor.stdout)
    gone = ctxview(proj, home, "uninstall", "claude-code", "--user")
    assert gone.returncode == 0
    assert not (home / ".claude" / "settings.json").exists()  # it held only ours
    assert json.loads((home / ".claude.json").read_text()) == {"numStartups": 3}


def test_a_config_that_is_not_json_is_refused_in_one_sentence(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{ not json")
    done = ctxview(tmp_path, tmp_path, "install", "claude-code")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("ctxview: ") and "is not valid JSON" in done.stderr
    assert done.stderr.count("\n") == 1
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{ not json"


def test_an_install_after_ctxview_moved_replaces_the_old_path(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    old = {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "/old/venv/bin/python -m ctxview.backend.agents.hook_client "
         "post-tool-use", "timeout": 5}]}]}}  # fmt: skip
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(old))
    done = ctxview(tmp_path, tmp_path, "install", "claude-code")
    assert "updated the PostToolUse hook" in done.stdout
    s = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    entries = [h for g in s["hooks"]["PostToolUse"] for h in g["hooks"]]
    assert len(entries) == 1 and not entries[0]["command"].startswith("/old/")
