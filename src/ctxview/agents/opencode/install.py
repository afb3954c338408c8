"""`ctxview install opencode [--project | --user]` / `uninstall opencode`: ctxview's plugin as
one file OpenCode loads by itself, `.opencode/plugin/ctxview.js` in the project (the default) or
`$XDG_CONFIG_HOME/opencode/plugin/ctxview.js` (`--user`, default `~/.config/opencode`). No
config file of OpenCode's is edited.

The plugin names the store, the interpreter, the hook client and the engine's command socket
by absolute path: it starts the resident engine through the hook client, as Claude Code's
SessionStart hook does, and talks to it over that socket in this user's private folder under
/tmp, as the command hooks do (no secret to read at each call; inside OpenCode it costs what a
`fetch` to the http face costs, measured), so no secret is written into the project. What the install found in the plugin's place (an earlier file of that
name, or no folder at all) is kept in `ctxview-install.json` beside the plugin folder, so
uninstall puts exactly that back; a second install changes nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxview.agents.claude_code.install import InstallError, ctxview_python, store_of, write_atomic

PLUGIN = "ctxview.js"
SIDECAR = "ctxview-install.json"
_SOURCE = Path(__file__).with_name("plugin.js")

__all__ = ["InstallError", "Plan", "install", "plugin_text", "uninstall"]


def config_root(scope: str, cwd: Path, home: Path) -> Path:
    """The folder that holds OpenCode's `plugin/` folder for this scope."""
    if scope == "user":
        xdg = os.environ.get("XDG_CONFIG_HOME")
        return (Path(xdg).expanduser() if xdg else home / ".config") / "opencode"
    return cwd / ".opencode"


def plugin_text(store: Path) -> str:
    """The plugin's source with this install's store, interpreter and hook client."""
    from ctxview.agents import hook_client
    from ctxview.agents.engine_socket import socket_file

    values = {"__STORE__": str(store), "__PYTHON__": ctxview_python(),
              "__HOOK_CLIENT__": str(Path(hook_client.__file__).absolute()),
              "__SOCKET__": socket_file(str(store))}  # fmt: skip
    text = _SOURCE.read_text(encoding="utf-8")
    for name, value in values.items():
        text = text.replace(name, json.dumps(value), 1)
    return text


@dataclass
class Plan:
    root: Path
    text: str | None  # the plugin file as it will be (None: removed)
    before: str | None
    sidecar: dict[str, Any] | None
    sidecar_after: dict[str, Any] | None = None
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)

    @property
    def plugin(self) -> Path:
        return self.root / "plugin" / PLUGIN

    def write(self, *, remove_empty: bool = False) -> list[Path]:
        written: list[Path] = []
        if self.text != self.before:
            if self.text is None:
                self.plugin.unlink(missing_ok=True)
            else:
                write_atomic(self.plugin, self.text)
                written.append(self.plugin)
        side = self.root / SIDECAR
        if self.sidecar_after != self.sidecar:
            if self.sidecar_after is None:
                side.unlink(missing_ok=True)
            else:
                write_atomic(side, json.dumps(self.sidecar_after, indent=2) + "\n")
        if self.text is None and self.sidecar:  # the folders the install made, if left empty
            for folder in (self.plugin.parent, self.root):
                if str(folder) in self.sidecar.get("made", []):
                    try:
                        folder.rmdir()
                    except OSError:  # something else is in it now: kept
                        continue
                    self.removed.append(folder)
        return written


def _load(scope: str, cwd: Path, home: Path) -> Plan:
    root = config_root(scope, cwd, home)
    try:
        before: str | None = (root / "plugin" / PLUGIN).read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"{root / 'plugin' / PLUGIN} cannot be read ({exc}).") from None
    try:
        sidecar = json.loads((root / SIDECAR).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        sidecar = None
    kept = sidecar if isinstance(sidecar, dict) else None
    return Plan(root, before, before, kept, sidecar_after=kept)  # unchanged unless planned


def install(scope: str, cwd: Path, home: Path, store: Path | None = None) -> Plan:
    plan = _load(scope, cwd, home)
    pinned = store_of(store)
    want = plugin_text(pinned)
    if plan.before == want:
        return plan
    memo = dict(plan.sidecar) if plan.sidecar else {
        "earlier": plan.before,
        "made": [str(f) for f in (plan.root, plan.root / "plugin") if not f.exists()],
    }  # fmt: skip
    plan.text, plan.sidecar_after = want, memo
    verb = "added" if plan.before is None else "updated"
    plan.changes.append(f"{verb} ctxview's plugin {plan.plugin} (store {pinned})")
    plan.notes.append("OpenCode loads it at its next start; `ctxview uninstall opencode` "
                      "removes it.")  # fmt: skip
    return plan


def uninstall(scope: str, cwd: Path, home: Path) -> Plan:
    plan = _load(scope, cwd, home)
    memo = plan.sidecar or {}
    if plan.before is None or (plan.sidecar is None and "ctxview" not in plan.before):
        return plan  # nothing of ours there
    earlier = memo.get("earlier")
    plan.text = earlier if isinstance(earlier, str) else None
    plan.sidecar_after = None
    plan.changes.append(f"{'restored the earlier' if plan.text else 'removed'} {plan.plugin}")
    return plan
