"""`ctxview install claude-code` / `uninstall`: ctxview's hooks and MCP server written into
Claude Code's own config files, merged with what is there.

- `--project` (the default): `.claude/settings.json` (hooks, `mcp__ctxview__recall` allowed,
  the project's `ctxview` server enabled) and `.mcp.json` (the server) in the current folder.
- `--user`: `~/.claude/settings.json` and `~/.claude.json`'s `mcpServers`.

Ours are recognised by their command (the installed ctxview's interpreter running its
`backend/agents/hook_client.py`, or `… ctxview hook`), so a second install changes
nothing, an install after ctxview moved replaces the old path, and uninstall removes exactly
what install added (and the containers it made that are empty again).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER = "ctxview"
RECALL = "mcp__ctxview__recall"
# Claude Code event -> our hook's argument, and the matcher of its entry (None: no matcher).
HOOKS: dict[str, tuple[str, str | None]] = {
    "PostToolUse": ("post-tool-use", "*"),
    "PostToolUseFailure": ("post-tool-use-failure", "*"),  # a failed call's output, stored
    "SessionStart": ("session-start", None),
    "PreCompact": ("pre-compact", None),
    "Stop": ("stop", None),  # the turn's last message, from the transcript
    "SubagentStop": ("subagent-stop", None),  # a sub-agent is done: its session ends
    "SessionEnd": ("session-end", None),
    # A background task's report arrives as a prompt (`<task-notification>`): its id, given
    "UserPromptSubmit": ("user-prompt-submit", None),
}
HOOK_TIMEOUT = 5  # seconds: Claude Code's own bound, above the hook's 2 s budget
_OURS = re.compile(r"backend[/.]agents[/.]hook_client\b|\bctxview\"? hook\b")


class InstallError(Exception):
    """A config file that cannot be merged (not JSON, not an object): one sentence."""


@dataclass
class Plan:
    """The files an install or uninstall changes, and a line per change for the person."""

    files: dict[Path, dict[str, Any]] = field(default_factory=dict)
    before: dict[Path, str | None] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)  # files left empty, so taken away

    def load(self, path: Path) -> dict[str, Any]:
        if path not in self.files:
            try:
                text: str | None = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = None
            self.before[path] = text
            try:
                data = json.loads(text) if text and text.strip() else {}
            except ValueError as exc:
                raise InstallError(f"{path} is not valid JSON ({exc}); fix it first.") from None
            if not isinstance(data, dict):
                raise InstallError(f"{path} does not hold a JSON object; fix it first.")
            self.files[path] = data
        return self.files[path]

    def write(self, *, remove_empty: bool = False) -> list[Path]:
        """Write the files whose content changed; the ones written. `remove_empty` (uninstall):
        a file left holding `{}` is removed, as before the install that made it."""
        written = []
        for path, data in self.files.items():
            if remove_empty and not data and self.before.get(path) is not None:
                path.unlink()
                self.removed.append(path)
                if path.parent.name == ".claude" and not any(path.parent.iterdir()):
                    path.parent.rmdir()  # the folder held only that file
                continue
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            if self.before.get(path) is not None and _same(self.before[path], data):
                continue
            if self.before.get(path) is None and not data:
                continue
            write_atomic(path, text)
            written.append(path)
        return written


def write_atomic(path: Path, text: str) -> None:
    """A host's config file replaced whole (never half-written), keeping its permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".ctxview-tmp")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def _same(text: str | None, data: dict[str, Any]) -> bool:
    try:
        return json.loads(text or "{}") == data
    except ValueError:
        return False


def ctxview_python() -> str:
    """The interpreter of the installed ctxview, by absolute path."""
    return str(Path(sys.executable).absolute())


def hook_command(arg: str, store: Path | None) -> str:
    """`python -S <installed hook_client.py> EVENT`: the leanest start (no site, no package
    import); the client is standard library only and a file of the installed ctxview."""
    from . import hook_client

    cmd = [ctxview_python(), "-S", str(Path(hook_client.__file__).absolute()), arg]
    if store is not None:
        cmd += ["--store", str(store.expanduser().resolve())]
    return shlex.join(cmd)


def mcp_server(store: Path | None) -> dict[str, Any]:
    exe = Path(sys.executable).absolute().with_name("ctxview")
    command, args = (str(exe), ["mcp"]) if exe.exists() else (
        ctxview_python(), ["-m", "ctxview.backend.cli", "mcp"])  # fmt: skip
    if store is not None:
        args = [*args, "--store", str(store.expanduser().resolve())]
    return {"type": "stdio", "command": command, "args": args, "env": {}}


def paths(scope: str, cwd: Path, home: Path) -> tuple[Path, Path]:
    """(settings.json, the MCP config) for a scope."""
    if scope == "user":
        return home / ".claude" / "settings.json", home / ".claude.json"
    return cwd / ".claude" / "settings.json", cwd / ".mcp.json"


def is_ours(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("command"), str) and bool(
        _OURS.search(entry["command"]))  # fmt: skip


def active_events(cwd: Path, home: Path) -> frozenset[str]:
    """The Claude Code events ctxview's hooks are on for in a project at `cwd`, in the settings
    Claude Code reads there (the user's, the project's and the project's local ones): what the
    model may be told the hooks do (`prompts.claims`)."""
    events: set[str] = set()
    for path in (home / ".claude" / "settings.json", cwd / ".claude" / "settings.json",
                 cwd / ".claude" / "settings.local.json"):  # fmt: skip
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for event, groups in hooks.items() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                inner = group.get("hooks") if isinstance(group, dict) else None
                if isinstance(inner, list) and any(is_ours(e) for e in inner):
                    events.add(event)
    return frozenset(events)


def install(scope: str, cwd: Path, home: Path, store: Path | None = None) -> Plan:
    settings_path, mcp_path = paths(scope, cwd, home)
    plan = Plan()
    settings = plan.load(settings_path)
    hooks = _object(settings, "hooks", settings_path)
    for event, (arg, matcher) in HOOKS.items():
        want = {"type": "command", "command": hook_command(arg, store), "timeout": HOOK_TIMEOUT}
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InstallError(f"{settings_path}: hooks.{event} is not a list; fix it first.")
        found = False
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            for i, entry in enumerate(inner):
                if is_ours(entry):
                    if found:  # a duplicate (an older install): keep one
                        inner[i] = None
                        plan.changes.append(f"removed a second {event} hook from {settings_path}")
                        continue
                    found = True
                    if entry != want or (matcher and group.get("matcher") != matcher):
                        inner[i] = want
                        if matcher:
                            group["matcher"] = matcher
                        plan.changes.append(f"updated the {event} hook in {settings_path}")
            group["hooks"] = [e for e in inner if e is not None]
        hooks[event] = [g for g in groups if not isinstance(g, dict) or g.get("hooks") != []]
        if not found:
            group = {"matcher": matcher, "hooks": [want]} if matcher else {"hooks": [want]}
            hooks[event].append(group)
            plan.changes.append(f"added the {event} hook to {settings_path}")
    perms = _object(settings, "permissions", settings_path)
    allow = perms.setdefault("allow", [])
    if isinstance(allow, list) and RECALL not in allow:
        allow.append(RECALL)
        plan.changes.append(f"allowed {RECALL} in {settings_path}")
    if scope == "project":
        enabled = settings.setdefault("enabledMcpjsonServers", [])
        if isinstance(enabled, list) and SERVER not in enabled:
            enabled.append(SERVER)
            plan.changes.append(f"enabled the project's MCP server {SERVER} in {settings_path}")
    mcp = plan.load(mcp_path)
    servers = _object(mcp, "mcpServers", mcp_path)
    want_server = mcp_server(store)
    if servers.get(SERVER) != want_server:
        verb = "updated" if SERVER in servers else "added"
        servers[SERVER] = want_server
        plan.changes.append(f"{verb} the MCP server {SERVER} (`ctxview mcp`) in {mcp_path}")
    return plan


def uninstall(scope: str, cwd: Path, home: Path) -> Plan:
    settings_path, mcp_path = paths(scope, cwd, home)
    plan = Plan()
    if settings_path.exists():
        settings = plan.load(settings_path)
        hooks = settings.get("hooks")
        if isinstance(hooks, dict):
            for event in list(hooks):
                groups = hooks[event]
                if not isinstance(groups, list):
                    continue
                kept_groups = []
                for group in groups:
                    inner = group.get("hooks") if isinstance(group, dict) else None
                    if isinstance(inner, list) and any(is_ours(e) for e in inner):
                        plan.changes.append(f"removed the {event} hook from {settings_path}")
                        group["hooks"] = [e for e in inner if not is_ours(e)]
                        if not group["hooks"]:
                            continue
                    kept_groups.append(group)
                if kept_groups:
                    hooks[event] = kept_groups
                else:
                    del hooks[event]
            if not hooks:
                del settings["hooks"]
        _drop(settings, "permissions", "allow", RECALL, plan, settings_path)
        _drop(settings, None, "enabledMcpjsonServers", SERVER, plan, settings_path)
    if mcp_path.exists():
        mcp = plan.load(mcp_path)
        servers = mcp.get("mcpServers")
        if isinstance(servers, dict) and SERVER in servers:
            del servers[SERVER]
            plan.changes.append(f"removed the MCP server {SERVER} from {mcp_path}")
            if not servers:
                del mcp["mcpServers"]
    return plan


def _object(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InstallError(f"{path}: {key} is not an object; fix it first.")
    return value


def _drop(data: dict[str, Any], outer: str | None, key: str, item: str, plan: Plan,
          path: Path) -> None:  # fmt: skip
    holder = data.get(outer) if outer else data
    if not isinstance(holder, dict) or not isinstance(holder.get(key), list):
        return
    if item in holder[key]:
        holder[key] = [x for x in holder[key] if x != item]
        plan.changes.append(f"removed {item} from {outer + '.' if outer else ''}{key} in {path}")
        if not holder[key]:
            del holder[key]
        if outer and not holder:
            del data[outer]
