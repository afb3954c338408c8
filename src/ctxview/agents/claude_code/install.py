"""`ctxview install claude-code` / `uninstall`: ctxview's hooks and MCP server written into
Claude Code's own config files, merged with what is there.

- `--project` (the default): `.claude/settings.local.json` (hooks, `mcp__ctxview__recall`
  allowed, the project's `ctxview` server enabled: the person's own file, never shared, since
  the hooks carry the engine's secret) and `.mcp.json` (the server) in the current folder. An
  older install's entries in `.claude/settings.json` are taken out.
- `--user`: `~/.claude/settings.json` and `~/.claude.json`'s `mcpServers`.

The hooks: SessionStart runs a command (`python -S …/hook_client.py session-start --store S`),
which starts the store's resident engine when it is not running; every other event is an http
hook (`POST http://127.0.0.1:PORT/hook/EVENT` with the store's secret in a header, see
`endpoint.py`), answered by the engine with no process started. The settings file holding the
secret is made 0600. The store is the one named at install (`--store`, `$CTXVIEW_STORE` or the
default), pinned in the hooks and the MCP server, since the port and secret are that store's.

Ours are recognised by their command (the installed ctxview's interpreter running its
`src/ctxview/agents/hook_client.py`, or `… ctxview hook`) or their URL and secret header, so a
second install changes nothing, an install after ctxview moved replaces the old path, and
uninstall removes exactly what install added (and the containers it made that are empty again).

Each file install changes is written in its own formatting (its indent, its final newline), and
`ctxview-install.json` beside the settings keeps what it held before and a hash of what install
wrote: uninstall puts the person's bytes (and mode) back when nobody changed the file since, and
otherwise takes out exactly ctxview's entries, keeping the rest as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxview.agents import endpoint

SERVER = "ctxview"
RECALL = "mcp__ctxview__recall"
SIDECAR = "ctxview-install.json"
# Claude Code event -> our hook's argument, the matcher of its entry (None: no matcher), and
# how Claude Code reaches the engine: a command where the engine may have to be started.
HOOKS: dict[str, tuple[str, str | None, str]] = {
    "PostToolUse": ("post-tool-use", "*", "http"),
    "PostToolUseFailure": ("post-tool-use-failure", "*", "http"),  # a failed call's output
    "SessionStart": ("session-start", None, "command"),  # starts the engine
    "PreCompact": ("pre-compact", None, "http"),
    "Stop": ("stop", None, "http"),  # the turn's last message, from the transcript
    "SubagentStop": ("subagent-stop", None, "http"),  # a sub-agent is done: its session ends
    "SessionEnd": ("session-end", None, "http"),
    # A background task's report arrives as a prompt (`<task-notification>`): its id, given
    # as the prompt's context
    "UserPromptSubmit": ("user-prompt-submit", None, "http"),
}
HOOK_TIMEOUT = 5  # seconds: Claude Code's own bound, above the engine's 2 s budget
FAIL_ENV = "CTXVIEW_HOOK_FAIL"  # in Claude Code's environment: every hook fails (to see it)
_OURS = re.compile(
    r"(?:backend|ctxview)[/.]agents[/.]hook_client\b|\bctxview\"? hook\b"
)  # backend/: before src/
_OUR_URL = re.compile(rf"^http://{re.escape(endpoint.LOOPBACK)}:\d+/hook/")


class InstallError(Exception):
    """A config file that cannot be merged (not JSON, not an object): one sentence."""


@dataclass
class _File:
    before: str | None  # the text as found (None: no file)
    mode: int | None  # its permission bits as found
    data: dict[str, Any]
    secret: bool = False  # it will hold the engine's secret: 0600


@dataclass
class Plan:
    """The files an install or uninstall changes, and a line per change for the person."""

    sidecar: Path
    files: dict[Path, _File] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)  # files left empty, so taken away
    installing: bool = True
    notes: list[str] = field(default_factory=list)  # for the person, not changes

    def load(self, path: Path) -> dict[str, Any]:
        if path not in self.files:
            try:
                text: str | None = path.read_text(encoding="utf-8")
                mode: int | None = stat.S_IMODE(path.stat().st_mode)
            except FileNotFoundError:
                text, mode = None, None
            try:
                data = json.loads(text) if text and text.strip() else {}
            except ValueError as exc:
                raise InstallError(f"{path} is not valid JSON ({exc}); fix it first.") from None
            if not isinstance(data, dict):
                raise InstallError(f"{path} does not hold a JSON object; fix it first.")
            self.files[path] = _File(text, mode, data)
        return self.files[path].data

    def write(self, *, remove_empty: bool = False) -> list[Path]:
        """Write the files whose content changed; the ones written. Install keeps, per file,
        what it held before in the sidecar; uninstall (`remove_empty`) puts those bytes back
        where the file is as install left it, else writes it without ctxview's entries (a
        file left holding `{}` is removed, as before the install that made it)."""
        kept = _read_sidecar(self.sidecar)
        written: list[Path] = []
        for path, f in self.files.items():
            key = str(path)
            if not self.installing:
                written += self._undo(path, f, kept.pop(key, None), remove_empty)
                continue
            text = _dumps(f.data, f.before)
            if f.before is not None and _same(f.before, f.data):
                continue
            if f.before is None and not f.data:
                continue
            write_atomic(path, text)
            if f.secret:
                os.chmod(path, 0o600)
                if f.mode is not None and f.mode & 0o077:
                    self.changes.append(f"made {path} 0600 (it holds the hook engine's secret)")
            written.append(path)
            kept[key] = _remembered(kept.get(key), f, text)
        if self.installing:
            if kept:
                _write_sidecar(self.sidecar, kept)
        else:
            if kept:  # files of another install not in this plan (left as they are)
                _write_sidecar(self.sidecar, kept)
            else:
                self.sidecar.unlink(missing_ok=True)
            for path in {*(p.parent for p in self.files), self.sidecar.parent}:
                if path.name == ".claude" and path.is_dir() and not any(path.iterdir()):
                    path.rmdir()  # the folder held only ctxview's files
        return written

    def _undo(self, path: Path, f: _File, kept: dict[str, Any] | None,
              remove_empty: bool) -> list[Path]:  # fmt: skip
        now = f.before
        if now is None:
            return []
        restorable = kept is not None and "before" in kept
        if restorable and kept is not None and _sha(now) == kept.get("after"):
            before = kept["before"]
            if before is None:
                path.unlink()
                self.removed.append(path)
                return []
            write_atomic(path, before)
            if isinstance(kept.get("mode"), int):
                os.chmod(path, kept["mode"])
            return [path]
        if remove_empty and not f.data:
            path.unlink()
            self.removed.append(path)
            return []
        if _same(now, f.data):
            return []
        write_atomic(path, _dumps(f.data, now))
        if kept is not None and isinstance(kept.get("mode"), int):
            os.chmod(path, kept["mode"])  # the secret is gone: the mode the person had
        return [path]


def _remembered(old: dict[str, Any] | None, f: _File, text: str) -> dict[str, Any]:
    """What the sidecar keeps of a file install wrote: the person's own bytes from before the
    first install (only while the file is as ctxview left it, and only bytes that hold
    nothing of ctxview's), the mode, and the hash of what install wrote now."""
    entry: dict[str, Any] = {"after": _sha(text)}
    if old is not None and "before" in old and f.before is not None and (
            _sha(f.before) == old.get("after")):  # fmt: skip
        entry["before"], entry["mode"] = old["before"], old.get("mode")
    elif old is None and not _has_ours(f.before):
        entry["before"], entry["mode"] = f.before, f.mode
    return entry


def _has_ours(text: str | None) -> bool:
    if not text:
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return True  # not ours to judge: never restored
    probe = Plan(Path(os.devnull))
    probe.files[Path("probe")] = _File(text, None, data if isinstance(data, dict) else {})
    _remove_ours(probe, Path("probe"), mcp=True)
    return bool(probe.changes)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_sidecar(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, dict)} if isinstance(
        files, dict) else {}  # fmt: skip


def _write_sidecar(path: Path, files: dict[str, Any]) -> None:
    write_atomic(path, json.dumps({"version": 1, "files": files}, indent=2,
                                  ensure_ascii=False) + "\n")  # fmt: skip
    os.chmod(path, 0o600)  # it holds the person's settings as they were


def _dumps(data: dict[str, Any], like: str | None) -> str:
    """`data` as JSON in the formatting of `like` (the file as found): its indent (spaces or a
    tab), its final newline, and non-ASCII written as it is; two spaces for a new file."""
    indent: str | int = 2
    if like:
        found = re.search(r"\n([ \t]+)\S", like)
        if found:
            indent = found.group(1)
        elif like.strip() and "\n" not in like.strip():
            indent = 0  # all on one line
    text = json.dumps(data, indent=indent or None, ensure_ascii=False)
    ending = "\n" if like is None or like.endswith("\n") or not like.strip() else ""
    return text + ending


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
        have: object = json.loads(text or "{}")
    except ValueError:
        return False
    return have == data


def ctxview_python() -> str:
    """The interpreter of the installed ctxview, by absolute path."""
    return str(Path(sys.executable).absolute())


def store_of(store: Path | None) -> Path:
    """The store the hooks serve: the one named, else the default as it is now (pinned)."""
    if store is None:
        from ctxview.store.paths import default_store_path

        store = default_store_path()
    return Path(store).expanduser().resolve()


def hook_command(arg: str, store: Path | None) -> str:
    """`python -S <installed hook_client.py> EVENT`: the leanest start (no site, no package
    import); the client is standard library only and a file of the installed ctxview."""
    from ctxview.agents import hook_client

    cmd = [ctxview_python(), "-S", str(Path(hook_client.__file__).absolute()), arg]
    if store is not None:
        cmd += ["--store", str(store.expanduser().resolve())]
    return shlex.join(cmd)


def hook_entry(event: str, store: Path, ep: endpoint.Endpoint) -> dict[str, Any]:
    arg, _, how = HOOKS[event]
    if how == "command":
        return {"type": "command", "command": hook_command(arg, store), "timeout": HOOK_TIMEOUT}
    return {"type": "http", "url": ep.url(event),
            "headers": {endpoint.HEADER: ep.secret, endpoint.FAIL_HEADER: f"${FAIL_ENV}"},
            "allowedEnvVars": [FAIL_ENV], "timeout": HOOK_TIMEOUT}  # fmt: skip


def mcp_server(store: Path | None) -> dict[str, Any]:
    exe = Path(sys.executable).absolute().with_name("ctxview")
    command, args = (str(exe), ["mcp"]) if exe.exists() else (
        ctxview_python(), ["-m", "ctxview.cli", "mcp"])  # fmt: skip
    if store is not None:
        args = [*args, "--store", str(store.expanduser().resolve())]
    return {"type": "stdio", "command": command, "args": args, "env": {}}


def paths(scope: str, cwd: Path, home: Path) -> tuple[Path, Path]:
    """(the settings file ctxview writes, the MCP config) for a scope."""
    if scope == "user":
        return home / ".claude" / "settings.json", home / ".claude.json"
    return cwd / ".claude" / "settings.local.json", cwd / ".mcp.json"


def legacy_paths(scope: str, cwd: Path, home: Path) -> list[Path]:
    """Where an older install put its hooks: the project's shared settings."""
    return [cwd / ".claude" / "settings.json"] if scope == "project" else []


def is_ours(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    if isinstance(entry.get("command"), str) and _OURS.search(entry["command"]):
        return True
    headers = entry.get("headers")
    return entry.get("type") == "http" and isinstance(entry.get("url"), str) and bool(
        _OUR_URL.match(entry["url"])) and isinstance(headers, dict) and (
        endpoint.HEADER in headers)  # fmt: skip


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
    plan = Plan(settings_path.parent / SIDECAR)
    pinned = store_of(store)
    for old in legacy_paths(scope, cwd, home):  # an older install: its entries move
        if old.exists():
            plan.load(old)
            _remove_ours(plan, old, mcp=False, verb="moved", to=settings_path)
    settings = plan.load(settings_path)
    plan.files[settings_path].secret = True
    ep = endpoint.ensure(pinned)
    hooks = _object(settings, "hooks", settings_path)
    for event, (_, matcher, _) in HOOKS.items():
        want = hook_entry(event, pinned, ep)
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
    if scope == "project" and _shared_by_git(cwd, settings_path):
        plan.notes.append(f"note: git does not ignore {settings_path}, which holds the hook "
                          "engine's secret: add it to .gitignore (Claude Code's own writes of "
                          "that file keep it ignored)")  # fmt: skip
    mcp = plan.load(mcp_path)
    servers = _object(mcp, "mcpServers", mcp_path)
    want_server = mcp_server(pinned)
    if servers.get(SERVER) != want_server:
        verb = "updated" if SERVER in servers else "added"
        servers[SERVER] = want_server
        plan.changes.append(f"{verb} the MCP server {SERVER} (`ctxview mcp`) in {mcp_path}")
    return plan


def uninstall(scope: str, cwd: Path, home: Path) -> Plan:
    settings_path, mcp_path = paths(scope, cwd, home)
    plan = Plan(settings_path.parent / SIDECAR, installing=False)
    for path in (*legacy_paths(scope, cwd, home), settings_path):
        if path.exists():
            plan.load(path)
            _remove_ours(plan, path, mcp=False)
    if mcp_path.exists():
        plan.load(mcp_path)
        _remove_ours(plan, mcp_path, mcp=True)
    return plan


def _remove_ours(plan: Plan, path: Path, *, mcp: bool, verb: str = "removed",
                 to: Path | None = None) -> None:  # fmt: skip
    """Take ctxview's entries out of a loaded file (hooks, the permission, the enabled server;
    with `mcp`, the server itself), leaving containers made empty out too."""
    data = plan.files[path].data
    where = f" to {to}" if to else ""
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            kept_groups = []
            for group in groups:
                inner = group.get("hooks") if isinstance(group, dict) else None
                if isinstance(inner, list) and any(is_ours(e) for e in inner):
                    plan.changes.append(f"{verb} the {event} hook from {path}{where}")
                    group["hooks"] = [e for e in inner if not is_ours(e)]
                    if not group["hooks"]:
                        continue
                kept_groups.append(group)
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
        if not hooks:
            del data["hooks"]
    _drop(data, "permissions", "allow", RECALL, plan, path, verb)
    _drop(data, None, "enabledMcpjsonServers", SERVER, plan, path, verb)
    servers = data.get("mcpServers")
    if mcp and isinstance(servers, dict) and SERVER in servers:
        del servers[SERVER]
        plan.changes.append(f"removed the MCP server {SERVER} from {path}")
        if not servers:
            del data["mcpServers"]


def _shared_by_git(cwd: Path, path: Path) -> bool:
    """Whether `path` is in a git work tree that does not ignore it (so a commit could take
    it); False when there is no git or no work tree."""
    import subprocess

    try:
        inside = subprocess.run(["git", "-C", str(cwd), "rev-parse", "--is-inside-work-tree"],
                                capture_output=True, text=True, timeout=10)  # fmt: skip
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return False
        ignored = subprocess.run(["git", "-C", str(cwd), "check-ignore", "-q", str(path)],
                                 capture_output=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return ignored.returncode == 1


def _object(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InstallError(f"{path}: {key} is not an object; fix it first.")
    return value


def _drop(data: dict[str, Any], outer: str | None, key: str, item: str, plan: Plan,
          path: Path, verb: str = "removed") -> None:  # fmt: skip
    holder = data.get(outer) if outer else data
    if not isinstance(holder, dict) or not isinstance(holder.get(key), list):
        return
    if item in holder[key]:
        holder[key] = [x for x in holder[key] if x != item]
        plan.changes.append(f"{verb} {item} from {outer + '.' if outer else ''}{key} in {path}")
        if not holder[key]:
            del holder[key]
        if outer and not holder:
            del data[outer]
