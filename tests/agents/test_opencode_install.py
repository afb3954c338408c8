"""`ctxview install opencode` writes one plugin file OpenCode loads by itself; `uninstall`
puts back exactly what was there (no folder, or an earlier file of that name)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ctxview.agents.engine_socket import socket_file

CTXVIEW = Path(sys.executable).with_name("ctxview")


def _ctxview(cwd: Path, home: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXVIEW", "XDG_"))}
    env.update(HOME=str(home), CTXVIEW_STORE=str(store))
    return subprocess.run([str(CTXVIEW), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}  # fmt: skip


def test_install_then_uninstall_restores_the_project_exactly(tmp_path: Path) -> None:
    proj, home, store = tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db"
    proj.mkdir()
    home.mkdir()
    (proj / "opencode.json").write_text('{"model": "x/y"}\n')
    before = _tree(proj)
    done = _ctxview(proj, home, store, "install", "opencode")
    assert done.returncode == 0, done.stderr
    plugin = proj / ".opencode" / "plugin" / "ctxview.js"
    text = plugin.read_text()
    assert json.dumps(str(store.resolve())) in text and "tool.execute.after" in text
    assert json.dumps(socket_file(str(store.resolve()))) in text  # the engine's private socket
    assert "secret" not in text
    assert (proj / "opencode.json").read_text() == '{"model": "x/y"}\n'  # not edited
    again = _ctxview(proj, home, store, "install", "opencode")
    assert "already set up" in again.stdout and plugin.read_text() == text
    done = _ctxview(proj, home, store, "uninstall", "opencode")
    assert done.returncode == 0, done.stderr
    assert _tree(proj) == before


def test_uninstall_puts_back_an_earlier_plugin_of_that_name(tmp_path: Path) -> None:
    proj, home, store = tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db"
    (proj / ".opencode" / "plugin").mkdir(parents=True)
    home.mkdir()
    (proj / ".opencode" / "plugin" / "ctxview.js").write_text("// mine\n")
    (proj / ".opencode" / "plugin" / "other.js").write_text("// other\n")
    before = _tree(proj)
    assert _ctxview(proj, home, store, "install", "opencode").returncode == 0
    assert "tool.execute.after" in (proj / ".opencode" / "plugin" / "ctxview.js").read_text()
    assert _ctxview(proj, home, store, "uninstall", "opencode").returncode == 0
    assert _tree(proj) == before


def test_user_scope_goes_to_xdg_config(tmp_path: Path) -> None:
    proj, home, store = tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db"
    proj.mkdir()
    home.mkdir()
    assert _ctxview(proj, home, store, "install", "opencode", "--user").returncode == 0
    assert (home / ".config" / "opencode" / "plugin" / "ctxview.js").exists()
    assert not (proj / ".opencode").exists()
    assert _ctxview(proj, home, store, "uninstall", "opencode", "--user").returncode == 0
    assert not (home / ".config" / "opencode").exists()
