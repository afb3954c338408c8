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
    shared, mcp = proj / ".claude" / "settings.json", proj / ".mcp.json"
    settings = proj / ".claude" / "settings.local.json"
    settings.write_text(json.dumps(THEIRS))
    shared.write_text(json.dumps({"model": "team"}))
    mcp.write_text(json.dumps(THEIR_MCP))

    store = tmp_path / "state" / "store.db"
    done = ctxview(proj, home, "--store", str(store), "install", "claude-code", "--project")
    assert done.returncode == 0, done.stderr
    for event in (
        "PostToolUse",
        "PostToolUseFailure",
        "SessionStart",
        "PreCompact",
        "Stop",
        "SessionEnd",
        "UserPromptSubmit",
    ):
        assert f"added the {event} hook to {settings}" in done.stdout
    assert f"added the MCP server ctxview (`ctxview mcp`) in {mcp}" in done.stdout
    assert json.loads(shared.read_text()) == {"model": "team"}  # the shared file: untouched
    s = json.loads(settings.read_text())
    assert s["model"] == "opus" and s["permissions"]["deny"] == ["Read(.env)"]
    assert s["permissions"]["allow"] == ["Bash(npm test)", "mcp__ctxview__recall"]
    assert s["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0] and len(s["hooks"]["Stop"]) == 2
    # Every tool call goes to the resident engine over loopback HTTP, with the store's secret.
    post = s["hooks"]["PostToolUse"]
    assert post[0] == THEIRS["hooks"]["PostToolUse"][0] and post[1]["matcher"] == "*"
    hook = post[1]["hooks"][0]
    assert hook["type"] == "http" and hook["url"].startswith("http://127.0.0.1:")
    assert hook["url"].endswith("/hook/PostToolUse")
    secret = hook["headers"]["X-Ctxview-Secret"]
    assert len(secret) == 64 and secret in Path(f"{store}.hook-endpoint.json").read_text()
    assert os.stat(f"{store}.hook-endpoint.json").st_mode & 0o777 == 0o600
    assert os.stat(settings).st_mode & 0o777 == 0o600  # it holds the secret
    # SessionStart starts the engine: a command, the lean start, by file.
    command = shlex.split(s["hooks"]["SessionStart"][0]["hooks"][0]["command"])
    assert Path(command[0]).is_absolute() and Path(command[0]).exists()  # the installed ctxview
    assert command[1] == "-S" and command[3] == "session-start"
    assert command[2].endswith("src/ctxview/agents/hook_client.py") and Path(command[2]).exists()
    m = json.loads(mcp.read_text())
    assert m["mcpServers"]["other"] == THEIR_MCP["mcpServers"]["other"]
    server = m["mcpServers"]["ctxview"]
    assert Path(server["command"]).is_absolute() and server["args"][0] == "mcp"
    assert s["enabledMcpjsonServers"] == ["ctxview"]

    before = (settings.read_text(), mcp.read_text())
    again = ctxview(proj, home, "--store", str(store), "install", "claude-code")
    assert (
        again.returncode == 0 and again.stdout == "claude-code: already set up, nothing changed.\n"
    )
    assert (settings.read_text(), mcp.read_text()) == before

    gone = ctxview(proj, home, "uninstall", "claude-code", "--project")
    assert gone.returncode == 0 and "removed the PostToolUse hook" in gone.stdout
    assert settings.read_text() == json.dumps(THEIRS)  # the bytes the person had
    assert mcp.read_text() == json.dumps(THEIR_MCP)
    assert not (proj / ".claude" / "ctxview-install.json").exists()
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
    assert (
        "claude code (user" in doctor.stdout
        and "hooks PostToolUse, PostToolUseFailure, SessionStart" in (doctor.stdout)
    )
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
    """An older install (command hooks, in the project's shared settings): its entries move to
    the person's own settings, as http hooks where they can be."""
    (tmp_path / ".claude").mkdir()
    old = {"model": "team", "hooks": {"PostToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "/old/venv/bin/python -m ctxview.agents.hook_client "
         "post-tool-use", "timeout": 5}]}]}}  # fmt: skip
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(old, indent=4))
    done = ctxview(tmp_path, tmp_path, "install", "claude-code")
    assert done.returncode == 0, done.stderr
    assert "moved the PostToolUse hook from" in done.stdout
    assert (tmp_path / ".claude" / "settings.json").read_text() == json.dumps({"model": "team"},
                                                                              indent=4)  # fmt: skip
    s = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    entries = [h for g in s["hooks"]["PostToolUse"] for h in g["hooks"]]
    assert len(entries) == 1 and entries[0]["type"] == "http"
    assert "/old/" not in json.dumps(s)


def _ours_left(data: object) -> bool:
    text = json.dumps(data)
    return "hook_client" in text or "127.0.0.1" in text or "mcp__ctxview__recall" in text


def test_uninstall_gives_back_the_bytes_the_person_had(tmp_path: Path) -> None:
    """Issue 16 point 1.10: a 4-space (or tab-indented) file comes back byte for byte, when
    nobody changed it since the install; and changed since, only ctxview's entries go, the
    person's formatting and changes stay."""
    proj, home = tmp_path / "proj", tmp_path / "home"
    (proj / ".claude").mkdir(parents=True)
    (home / ".claude").mkdir(parents=True)
    mine = {
        proj / ".claude" / "settings.json": json.dumps(THEIRS, indent=4),  # no final newline
        proj / ".claude" / "settings.local.json": json.dumps({"model": "x"}, indent="\t") + "\n",
        proj / ".mcp.json": json.dumps(THEIR_MCP, indent=4) + "\n",
        home / ".claude" / "settings.json": json.dumps({"theme": "dark", "é": "ü"}, indent=4,
                                                       ensure_ascii=False) + "\n",
        home / ".claude.json": json.dumps({"numStartups": 3}, indent=4) + "\n",
    }  # fmt: skip
    for path, text in mine.items():
        path.write_text(text)
    for scope in ("--project", "--user"):
        assert ctxview(proj, home, "--store", str(tmp_path / "s.db"), "install", "claude-code",
                       scope).returncode == 0  # fmt: skip
    assert any(p.read_text() != t for p, t in mine.items())  # the install did change them
    for scope in ("--project", "--user"):
        done = ctxview(proj, home, "uninstall", "claude-code", scope)
        assert done.returncode == 0, done.stderr
    for path, text in mine.items():
        assert path.read_text() == text, path

    # Changed since the install: ctxview's entries come out, the rest stays as it is now.
    settings = home / ".claude" / "settings.json"
    assert ctxview(proj, home, "--store", str(tmp_path / "s.db"), "install", "claude-code",
                   "--user").returncode == 0  # fmt: skip
    data = json.loads(settings.read_text())
    data["model"] = "sonnet"  # the person's own change, in their own formatting
    settings.write_text(json.dumps(data, indent=4, ensure_ascii=False) + "\n")
    assert ctxview(proj, home, "uninstall", "claude-code", "--user").returncode == 0
    after = settings.read_text()
    assert after == json.dumps({"theme": "dark", "é": "ü", "model": "sonnet"}, indent=4,
                               ensure_ascii=False) + "\n"  # fmt: skip
    assert not _ours_left(json.loads((home / ".claude.json").read_text()))


def test_doctor_says_when_a_proxy_would_carry_the_http_hooks(tmp_path: Path) -> None:
    """Claude Code sends a request to 127.0.0.1 through HTTP_PROXY unless NO_PROXY names it:
    the hooks' inputs and secret would go to the proxy."""
    proj, home = tmp_path / "proj", tmp_path / "home"
    proj.mkdir()
    home.mkdir()
    store = str(tmp_path / "s.db")
    assert ctxview(proj, home, "--store", store, "install", "claude-code").returncode == 0
    env = {**os.environ, "HOME": str(home), "HTTP_PROXY": "http://proxy.example:3128"}
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    done = subprocess.run([str(CTXVIEW), "--store", store, "doctor"], cwd=proj, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1 and "add 127.0.0.1 to NO_PROXY" in done.stdout
    env["NO_PROXY"] = "localhost,127.0.0.1"
    done = subprocess.run([str(CTXVIEW), "--store", store, "doctor"], cwd=proj, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "NO_PROXY" not in done.stdout
