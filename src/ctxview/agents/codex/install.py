"""`ctxview install codex` / `uninstall codex`: `ctxview mcp --tools all` as a Codex MCP server,
and Codex's own shell tool switched off, in `$CODEX_HOME/config.toml` (default `~/.codex`).

Codex's hooks cannot replace a tool's output, so its model gets the rules through ctxview's
tools instead of its own: `[mcp_servers.ctxview]` runs the installed ctxview by absolute path,
and `[features] shell_tool = false` takes away `exec_command`, so reads, searches and commands
go through the engine. Codex's `apply_patch` cannot be switched off and stays outside the rules.

The file is edited with tomlkit, so the person's comments, order and other settings stay as they
were. What the install replaced (the earlier `shell_tool`, an earlier `ctxview` server) is kept
in `ctxview-install.json` beside the config, so uninstall puts it back; a second install
changes nothing.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from ctxview.agents.claude_code.install import InstallError, write_atomic

SERVER = "ctxview"
SIDECAR = "ctxview-install.json"
# The engine's bash runs up to bash.timeout_seconds (120 s by default); Codex's own limit on an
# MCP call (60 s by default) must not cut it first.
TOOL_TIMEOUT = 300
STARTUP_TIMEOUT = 30  # the SDK's import is slow on a cold machine
_ABSENT = "absent"


def codex_home(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    return Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else Path.home() / ".codex"


def server_entry(store: Path | None, home: Path) -> dict[str, Any]:
    """`ctxview mcp --tools all` by absolute path. Codex passes its MCP servers only a few
    variables (HOME, PATH, LANG, …), so a store chosen by `CTXVIEW_STORE` or `XDG_STATE_HOME`
    is written into the arguments, and CODEX_HOME into its env (the server names its session
    after the rollout file there)."""
    exe = Path(sys.executable).absolute().with_name("ctxview")
    command, args = (str(exe), ["mcp"]) if exe.exists() else (
        str(Path(sys.executable).absolute()), ["-m", "ctxview.cli", "mcp"])  # fmt: skip
    args += ["--tools", "all"]
    if store is None and (os.environ.get("CTXVIEW_STORE") or os.environ.get("XDG_STATE_HOME")):
        from ctxview.store import default_store_path

        store = default_store_path()
    if store is not None:
        args += ["--store", str(Path(store).expanduser().resolve())]
    return {
        "command": command,
        "args": args,
        # Codex otherwise starts its first turn before the server has listed its tools; with
        # its shell off, ctxview's tools are the ones it works with.
        "required": True,
        "startup_timeout_sec": STARTUP_TIMEOUT,
        "tool_timeout_sec": TOOL_TIMEOUT,
        "env": {"CODEX_HOME": str(home.expanduser().resolve())},
    }


@dataclass
class Plan:
    """The config as it will be written, and a line per change for the person."""

    config: Path
    doc: tomlkit.TOMLDocument
    before: str | None
    sidecar: dict[str, Any] | None
    changes: list[str] = field(default_factory=list)
    sidecar_after: dict[str, Any] | None = None
    removed: list[Path] = field(default_factory=list)

    def write(self) -> list[Path]:
        """Write what changed; the files written (`removed`: the config, when the install had
        made it and uninstall left it empty)."""
        written: list[Path] = []
        text = tomlkit.dumps(self.doc)
        if text != (self.before or ""):
            if self.before is None and not text.strip():
                pass
            elif not text.strip() and self.sidecar and self.sidecar.get("created"):
                self.config.unlink(missing_ok=True)
                self.removed.append(self.config)
            else:
                write_atomic(self.config, text)
                written.append(self.config)
        side = self.config.with_name(SIDECAR)
        if self.sidecar_after != self.sidecar:
            if self.sidecar_after is None:
                side.unlink(missing_ok=True)
            else:
                write_atomic(side, json.dumps(self.sidecar_after, indent=2) + "\n")
        return written


def _load(home: Path) -> Plan:
    config = home / "config.toml"
    try:
        before: str | None = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    try:
        doc = tomlkit.parse(before or "")
    except TOMLKitError as exc:
        raise InstallError(f"{config} is not valid TOML ({exc}); fix it first.") from None
    side = home / SIDECAR
    try:
        sidecar = json.loads(side.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        sidecar = None
    return Plan(config, doc, before, sidecar if isinstance(sidecar, dict) else None)


def install(home: Path, store: Path | None = None) -> Plan:
    plan = _load(home)
    doc, where = plan.doc, plan.config
    # What was there before the first install, for uninstall to restore.
    memo: dict[str, Any] = dict(plan.sidecar) if plan.sidecar else {"created": plan.before is None}
    servers = _table(doc, "mcp_servers", where, super_table=True)
    want = server_entry(store, home)
    have = servers.get(SERVER)
    if have is None or _plain(have) != want:
        if plan.sidecar is None:
            memo["server"] = _plain(have) if have is not None else _ABSENT
        entry = tomlkit.table()
        for key, value in want.items():
            if isinstance(value, dict):  # env as an inline table: `env = { CODEX_HOME = … }`
                inline = tomlkit.inline_table()
                inline.update(value)
                entry[key] = inline
            else:
                entry[key] = value
        entry.add(tomlkit.nl())  # a blank line before whatever table follows
        verb = "added" if have is None else "updated"
        servers[SERVER] = entry
        plan.changes.append(f"{verb} [mcp_servers.{SERVER}] (`{_shown(want)}`) in {where}")
    features = _table(doc, "features", where)
    shell = features.get("shell_tool")
    if _plain(shell) is not False:
        if plan.sidecar is None:
            memo["shell_tool"] = _plain(shell) if shell is not None else _ABSENT
        features["shell_tool"] = False
        was = "" if shell is None else f" (was {json.dumps(_plain(shell))})"
        plan.changes.append(f"set [features] shell_tool = false{was} in {where}")
    plan.sidecar_after = memo if plan.changes or plan.sidecar else None
    return plan


def uninstall(home: Path) -> Plan:
    plan = _load(home)
    doc, where, memo = plan.doc, plan.config, plan.sidecar or {}
    servers = doc.get("mcp_servers")
    if isinstance(servers, dict) and SERVER in servers:
        old = memo.get("server", _ABSENT)
        if old == _ABSENT or not isinstance(old, dict):
            del servers[SERVER]
            plan.changes.append(f"removed [mcp_servers.{SERVER}] from {where}")
            if not servers:
                del doc["mcp_servers"]
        else:
            servers[SERVER] = old
            plan.changes.append(f"restored the earlier [mcp_servers.{SERVER}] in {where}")
    features = doc.get("features")
    if isinstance(features, dict) and _plain(features.get("shell_tool")) is False:
        old = memo.get("shell_tool", _ABSENT)
        if old == _ABSENT:
            del features["shell_tool"]
            plan.changes.append(f"removed [features] shell_tool from {where}")
            if not features:
                del doc["features"]
        elif old is not False:
            features["shell_tool"] = old
            plan.changes.append(f"set [features] shell_tool back to {json.dumps(old)} in {where}")
    plan.sidecar_after = None
    return plan


def _table(doc: tomlkit.TOMLDocument, key: str, where: Path, *, super_table: bool = False) -> Any:
    value = doc.get(key)
    if value is None:
        value = tomlkit.table(is_super_table=super_table)
        doc[key] = value
    if not isinstance(value, Table | dict):
        raise InstallError(f"{where}: {key} is not a table; fix it first.")
    return value


def _plain(value: Any) -> Any:
    """A tomlkit item as plain Python (for comparing and for the sidecar's JSON)."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def _shown(entry: dict[str, Any]) -> str:
    return " ".join([entry["command"], *entry["args"]])
