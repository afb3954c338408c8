"""`ctxview install codex` / `ctxview uninstall codex` as a person runs them: CODEX_HOME's
config.toml gains `[mcp_servers.ctxview]` (`ctxview mcp --tools all` by absolute path) and
`[features] shell_tool = false`, merged with what is there (comments and order kept), a second
install changes nothing, each change is printed, and uninstall gives back the file as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

CTXVIEW = [sys.executable, "-m", "ctxview.cli"]

MINE = """\
# my Codex settings
model = "gpt-5-codex"  # the one I like
approval_policy = "on-request"

[features]
shell_tool = true   # I had it on
web_search_request = true

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "0"]

[profiles.fast]
model = "gpt-5-mini"
"""


def _ctxview(codex_home: Path, *args: str, store: Path | None = None
             ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("CTXVIEW_STORE", "XDG_STATE_HOME")}
    env["CODEX_HOME"] = str(codex_home)
    pre = ["--store", str(store)] if store else []
    return subprocess.run([*CTXVIEW, *pre, *args], env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_install_merges_prints_is_idempotent_and_uninstall_restores(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    config = home / "config.toml"
    config.write_text(MINE)
    store = tmp_path / "state" / "store.db"

    done = _ctxview(home, "install", "codex", store=store)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"added [mcp_servers.ctxview] (`{_command(config)}`) in {config}",
        f"set [features] shell_tool = false (was true) in {config}",
    ]
    assert f"wrote {config}" in done.stdout
    text = config.read_text()
    data = tomllib.loads(text)
    server = data["mcp_servers"]["ctxview"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()
    assert server["args"][-5:] == ["mcp", "--tools", "all", "--store", str(store.resolve())]
    assert server["required"] is True and server["tool_timeout_sec"] >= 120
    assert server["env"] == {"CODEX_HOME": str(home.resolve())}  # Codex passes it no other
    assert data["features"] == {"shell_tool": False, "web_search_request": True}
    # Everything else as it was, comments included.
    assert data["mcp_servers"]["docs"] == {"command": "docs-server", "args": ["--port", "0"]}
    assert data["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    assert text.startswith('# my Codex settings\nmodel = "gpt-5-codex"  # the one I like\n')

    again = _ctxview(home, "install", "codex", store=store)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "codex: already set up, nothing changed."
    assert config.read_text() == text

    gone = _ctxview(home, "uninstall", "codex")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines()[:2] == [
        f"removed [mcp_servers.ctxview] from {config}",
        f"set [features] shell_tool back to true in {config}",
    ]
    assert config.read_text() == MINE  # byte for byte
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]
    nothing = _ctxview(home, "uninstall", "codex")
    assert nothing.returncode == 0 and "nothing of ctxview's was there" in nothing.stdout
    assert config.read_text() == MINE


def test_no_config_yet_and_the_default_home(tmp_path: Path) -> None:
    """No CODEX_HOME: ~/.codex. No config.toml: install makes one, uninstall takes it away."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("CODEX_HOME", "CTXVIEW_STORE", "XDG_STATE_HOME")}  # fmt: skip
    env["HOME"] = str(home)
    run = {"env": env, "capture_output": True, "text": True, "timeout": 60}
    done = subprocess.run([*CTXVIEW, "install", "codex"], **run)  # type: ignore[call-overload]
    assert done.returncode == 0, done.stderr
    config = home / ".codex" / "config.toml"
    data = tomllib.loads(config.read_text())
    # No store named and none chosen by the environment: Codex's HOME finds the default one.
    assert data["mcp_servers"]["ctxview"]["args"][-3:] == ["mcp", "--tools", "all"]
    assert data["features"] == {"shell_tool": False}
    assert "shell_tool = false in" in done.stdout and "(was" not in done.stdout
    gone = subprocess.run([*CTXVIEW, "uninstall", "codex"], **run)  # type: ignore[call-overload]
    assert gone.returncode == 0, gone.stderr
    assert not config.exists()
    assert f"removed {config}" in gone.stdout


def test_a_config_that_is_not_toml_is_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    config = home / "config.toml"
    config.write_text('model = "unterminated\n')
    done = _ctxview(home, "install", "codex")
    assert done.returncode == 1
    assert done.stderr.startswith(f"ctxview: {config} is not valid TOML (")
    assert done.stderr.strip().endswith("fix it first.") and done.stderr.count("\n") == 1
    assert config.read_text() == 'model = "unterminated\n'


def _command(config: Path) -> str:
    server = tomllib.loads(config.read_text())["mcp_servers"]["ctxview"]
    return " ".join([server["command"], *server["args"]])
