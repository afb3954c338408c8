"""`ctxview doctor`: is ctxview set up in Claude Code here (and in the other agents), does the
store open, is the hook engine running, and what failed in a hook lately (hooks never print
their failures: the agent keeps its own output, so this is where they show). Exits 1 when
something needs a look."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

from ctxview.agents import endpoint, failures, hook_trace
from ctxview.agents.claude_code.install import HOOKS, SERVER, is_ours, legacy_paths, paths
from ctxview.agents.hook_client import socket_path
from ctxview.commands.common import store_path
from ctxview.store.connect import sqlite_library, wal_reset_risk

SHOW = 10  # failures listed
TRACES = 200  # the newest hooks whose phases are summed up


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clear", action="store_true",
                        help="forget the recorded hook failures after showing them")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    store = store_path(args)
    problems = 0
    print(f"store: {store}")
    bad, open_sessions = _store(store)
    problems += bad
    risk = wal_reset_risk()
    if risk is not None:  # said, not a problem: nothing in ctxview's set-up to put right
        print(f"  {risk} (Python links {sqlite_library()})")
    urls: list[tuple[str, dict[str, Any]]] = []
    for scope in ("project", "user"):
        problems += _claude(scope, urls)
    problems += _other_agents()
    problems += _engine(store, urls, open_sessions)
    _timings(store)
    found = failures.read(store)
    if found:
        problems += 1
        print(f"hook failures: {len(found)} recorded (Claude Code got its own output each time); "
              f"the newest:")  # fmt: skip
        for f in found[-SHOW:]:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(f.get("ts", 0))))
            what = " ".join(str(f[k]) for k in ("tool_name", "tool_use_id") if f.get(k))
            print(f"  {when}  {f.get('event', '?')}{' ' + what if what else ''}: {f.get('error')}")
        if args.clear:
            failures.clear(store)
            print("  (cleared)")
    else:
        print("hook failures: none")
    return 1 if problems else 0


def _other_agents() -> int:
    """Where ctxview is set up in the other agents (what `ctxview uninstall` would take away,
    looked at without writing anything), a line each; the ones it is not, on one line."""
    from ctxview.agents.claude_code.install import InstallError
    from ctxview.commands.install import HOSTS, host_module

    problems = 0
    absent: list[str] = []
    for host in sorted(h for h in HOSTS if h != "claude-code"):
        mod = host_module(host)
        found: list[str] = []
        for scope in ("user",) if host == "codex" else ("project", "user"):
            try:
                plan = (mod.uninstall(mod.codex_home()) if host == "codex" else
                        mod.uninstall(scope, Path.cwd(), Path.home()))  # fmt: skip
            except (InstallError, OSError) as exc:  # a file there that is not ctxview's
                problems += 1
                print(f"{host} ({scope}): {exc}")
                continue
            if plan.changes:
                found.append(scope)
        if found:
            print(f"{host}: set up ({', '.join(found)})")
        else:
            absent.append(host)
    if absent:
        print(f"not set up in {', '.join(absent)} (`ctxview install NAME`)")
    return problems


def _timings(store: Path) -> None:
    """Where the newest hooks' time went, phase by phase (the engine's own traces)."""
    traces = [t for t in hook_trace.read(store) if t.get("event") in (
        "PostToolUse", "PostToolUseFailure")][-TRACES:]  # fmt: skip
    if not traces:
        return
    print(f"hook timings: the last {len(traces)} tool calls, in the engine "
          "(`answered`: what the call waited for)")  # fmt: skip
    for line in hook_trace.table(traces):
        print(line)


def _store(store: Path) -> tuple[int, int]:
    """(problems, hooked Claude Code sessions open; their sub-agents not counted)."""
    why = unwritable(store)
    if why is not None:
        print(f"  cannot be opened for writing: {why}; every hook fails (Claude Code keeps its "
              "own output)")  # fmt: skip
        if not store.exists():
            return 1, 0
    if not store.exists():
        print("  no store yet (the first hook or `ctxview demo` makes one)")
        return 0, 0
    try:
        rows = asyncio.run(_live(store))
    except Exception as exc:  # the store's own sentence
        print(f"  cannot be opened: {exc}")
        return 1, 0
    print(f"  opens; {len(rows)} live Claude Code session(s)"
          + "".join(f"\n    {sid}  {ws}" + (f"  (+{n} sub-agent{'s' * (n != 1)} running)"
                                              if n else "") for sid, ws, n in rows))  # fmt: skip
    return (1 if why else 0), len(rows)


def unwritable(store: Path) -> str | None:
    """Why a hook could not open the store for writing, looked at without writing anything;
    None when nothing says it could not."""
    if store.exists():
        if not os.access(store, os.W_OK):
            return f"{store} is read-only (or immutable)"
        folder = store.parent
        if not Path(f"{store}-wal").exists() and not os.access(folder, os.W_OK | os.X_OK):
            return f"its folder {folder} cannot be written (SQLite makes its -wal and -shm there)"
        return None
    for above in store.parents:  # the nearest folder there is: the store would be made below
        if not above.exists() and not above.is_symlink():
            continue
        if not above.is_dir():
            return f"{above} is a file, not a folder, so the store cannot be made below it"
        if not os.access(above, os.W_OK | os.X_OK):
            return f"the folder {above} cannot be written, so the store cannot be made there"
        return None
    return None


async def _live(store: Path) -> list[tuple[str, str, int]]:
    """The live hooked Claude Code sessions (a sub-agent is its session's, not one of them),
    each with how many of its sub-agents are running."""
    from ctxview.store import Reader

    async with await Reader.open(store) as reader:
        return await reader.hooked_open_sessions(limit=10)


def _claude(scope: str, urls: list[tuple[str, dict[str, Any]]]) -> int:
    settings_path, mcp_path = paths(scope, Path.cwd(), Path.home())
    label = f"claude code ({scope}, {settings_path})"
    ours: dict[str, dict[str, Any]] = {}
    for path in (*legacy_paths(scope, Path.cwd(), Path.home()), settings_path):
        settings = _json(path)
        hooks = h if isinstance(h := settings.get("hooks"), dict) else {}
        for event in HOOKS:
            for group in hooks.get(event) or []:
                for entry in (group.get("hooks") or []) if isinstance(group, dict) else []:
                    if is_ours(entry):
                        ours[event] = entry
    servers = _json(mcp_path).get("mcpServers") or {}
    if not ours and SERVER not in servers:
        print(f"{label}: not set up (`ctxview install claude-code --{scope}`)")
        return 0
    problems = 0
    missing = [e for e in HOOKS if e not in ours]
    print(f"{label}: hooks {', '.join(ours) or 'none'}"
          + (f"; missing {', '.join(missing)}" if missing else ""))  # fmt: skip
    problems += bool(missing)
    old = [e for e, entry in ours.items() if HOOKS[e][2] == "http" and entry.get("type") != "http"]
    if old:
        print(f"  {', '.join(old)} still start a process at each call (an older install): run "
              f"`ctxview install claude-code --{scope}` again")  # fmt: skip
        problems += 1
    for entry in ours.values():
        if entry.get("type") == "http":
            urls.append((label, entry))
    for command in {e["command"] for e in ours.values() if isinstance(e.get("command"), str)}:
        exe = shlex.split(command)[0]
        if not Path(exe).exists():
            print(f"  the hook's ctxview {exe} is gone; run `ctxview install claude-code "
                  f"--{scope}` again")  # fmt: skip
            problems += 1
    if SERVER in servers:
        line = shlex.join([servers[SERVER].get("command", "?"), *servers[SERVER].get("args", [])])
        print(f"  MCP server {SERVER} in {mcp_path}: {line}")
    else:
        print(f"  no MCP server {SERVER} in {mcp_path}: the model cannot recall")
        problems += 1
    return problems


def _engine(store: Path, urls: list[tuple[str, dict[str, Any]]], open_sessions: int) -> int:
    """Is the store's engine up, and does it answer Claude Code's http hooks there? Not
    running is a problem only while a hooked session is open (its calls go unhooked)."""
    problems = 0
    ep = endpoint.load(store)
    running = socket_path(store).exists()
    if ep is None:
        state = "running" if running else "not running (starts with the next Claude Code session)"
        print(f"hook engine: {state}; no http endpoint for this store")
        if urls:
            print("  the http hooks installed were made for another store: run `ctxview "
                  "install claude-code` again (or pass that store with --store)")  # fmt: skip
            problems += 1
        return problems
    for label, entry in urls:
        headers = h if isinstance(h := entry.get("headers"), dict) else {}
        if not str(entry.get("url", "")).startswith(f"http://{endpoint.LOOPBACK}:{ep.port}/") or (
                headers.get(endpoint.HEADER) != ep.secret):  # fmt: skip
            print(f"  {label}: its http hooks name another port or secret than this store's "
                  f"({entry.get('url')}): run `ctxview install claude-code` again")  # fmt: skip
            problems += 1
            break
    where = f"http://{endpoint.LOOPBACK}:{ep.port}"
    if urls and (proxy := _proxied()):
        print(f"  {proxy} is set and NO_PROXY does not name {endpoint.LOOPBACK}: Claude Code "
              f"would send its http hooks (the tool outputs, and the hooks' secret) through that "
              f"proxy; add {endpoint.LOOPBACK} to NO_PROXY")  # fmt: skip
        problems += 1
    status, body = _health(ep)
    if status == 200:
        print(f"hook engine: running (pid {body.get('engine', '?')}), answering Claude Code's "
              f"http hooks at {where}")  # fmt: skip
    elif status is None and not open_sessions:
        print(f"hook engine: not running (the next hooked call of any agent starts it, at {where})")
    elif status is None:
        print(f"hook engine: not running while {open_sessions} Claude Code session(s) are open: "
              f"nothing answers at {where}, so their tool calls keep Claude Code's own output "
              "until the next session start (or `--resume`) starts it")  # fmt: skip
        problems += 1 if urls else 0
    else:
        uid = endpoint.listener_uid(ep.port)
        who = "" if uid is None else f" (a program of user id {uid})"
        answer = f"HTTP {status}" if status else "not as the engine does"
        print(f"hook engine: something else listens at {where}{who} ({answer}): Claude Code's "
              "http hooks are sent to it; stop it, or install again for another port")  # fmt: skip
        problems += 1
    return problems


def _proxied() -> str | None:
    """The proxy variable Claude Code (started from this environment) would send a request to
    127.0.0.1 through: it honours NO_PROXY, and nothing else, for loopback."""
    import os

    skip = (os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or "").split(",")
    if any(x.strip() in ("*", endpoint.LOOPBACK) for x in skip):
        return None
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        if os.environ.get(name):
            return name
    return None


def _health(ep: endpoint.Endpoint) -> tuple[int | None, dict[str, Any]]:
    import http.client

    conn = http.client.HTTPConnection(endpoint.LOOPBACK, ep.port, timeout=2)
    try:
        conn.request("GET", "/health", headers={endpoint.HEADER: ep.secret})
        resp = conn.getresponse()
        raw = resp.read()
    except ConnectionRefusedError:
        return None, {}  # nothing listens
    except (OSError, http.client.HTTPException):
        return 0, {}  # something listens, and does not answer as the engine does
    finally:
        conn.close()
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        body = {}
    return resp.status, body if isinstance(body, dict) else {}


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
