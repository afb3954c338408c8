"""`ctxview doctor`: is ctxview set up in Claude Code here, does the store open, is the hook
engine running, and what failed in a hook lately (hooks never print their failures: Claude Code
keeps its own output, so this is where they show). Exits 1 when something needs a look."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import time
from pathlib import Path
from typing import Any

from ..agents import failures, hook_trace
from ..agents.hook_client import socket_path
from ..agents.install_claude import HOOKS, SERVER, is_ours, paths
from .common import store_path

SHOW = 10  # failures listed
TRACES = 200  # the newest hooks whose phases are summed up


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clear", action="store_true",
                        help="forget the recorded hook failures after showing them")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    store = store_path(args)
    problems = 0
    print(f"store: {store}")
    problems += _store(store)
    for scope in ("project", "user"):
        problems += _claude(scope)
    sock = socket_path(store)
    print(f"hook engine: {'running' if sock.exists() else 'not running (starts with the first hook)'}")
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
            Path(failures.log_path(store)).unlink(missing_ok=True)
            print("  (cleared)")
    else:
        print("hook failures: none")
    return 1 if problems else 0


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


def _store(store: Path) -> int:
    if not store.exists():
        print("  no store yet (the first hook or `ctxview demo` makes one)")
        return 0
    try:
        rows = asyncio.run(_live(store))
    except Exception as exc:  # the store's own sentence
        print(f"  cannot be opened: {exc}")
        return 1
    print(f"  opens; {len(rows)} live Claude Code session(s)"
          + "".join(f"\n    {sid}  {ws}" for sid, ws in rows))  # fmt: skip
    return 0


async def _live(store: Path) -> list[tuple[str, str]]:
    from ..store import Reader

    async with await Reader.open(store) as reader:
        rows = await reader._conn.execute_fetchall(
            "SELECT id, workspace FROM sessions WHERE source = 'claude-code' AND ended IS NULL "
            "AND json_extract(data, '$.hooked') ORDER BY started DESC LIMIT 10"
        )
    return [(r[0], r[1]) for r in rows]


def _claude(scope: str) -> int:
    settings_path, mcp_path = paths(scope, Path.cwd(), Path.home())
    label = f"claude code ({scope}, {settings_path})"
    settings = _json(settings_path)
    hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
    ours: dict[str, str] = {}
    for event in HOOKS:
        for group in hooks.get(event) or []:
            for entry in (group.get("hooks") or []) if isinstance(group, dict) else []:
                if is_ours(entry):
                    ours[event] = entry["command"]
    servers = _json(mcp_path).get("mcpServers") or {}
    if not ours and SERVER not in servers:
        print(f"{label}: not set up (`ctxview install claude-code --{scope}`)")
        return 0
    problems = 0
    missing = [e for e in HOOKS if e not in ours]
    print(f"{label}: hooks {', '.join(ours) or 'none'}"
          + (f"; missing {', '.join(missing)}" if missing else ""))  # fmt: skip
    problems += bool(missing)
    for command in set(ours.values()):
        exe = shlex.split(command)[0]
        if not Path(exe).exists():
            print(f"  the hook's ctxview {exe} is gone; run `ctxview install claude-code "
                  f"--{scope}` again")  # fmt: skip
            problems += 1
    if SERVER in servers:
        print(f"  MCP server {SERVER} in {mcp_path}: {shlex.join([servers[SERVER].get('command', '?'), *servers[SERVER].get('args', [])])}")
    else:
        print(f"  no MCP server {SERVER} in {mcp_path}: the model cannot recall")
        problems += 1
    return problems


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
