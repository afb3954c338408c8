"""`ctxview install gemini [--project | --user]`: ctxview's hooks and its MCP server `ctxview` in
Gemini CLI's settings (`.gemini/settings.json` of the folder, or `~/.gemini/settings.json`).

Gemini CLI 0.61 runs command hooks only (in `bash -c`): every hook is `. hook_client.sh PYTHON
STORE`, bash builtins that hand the hook input to the store's resident engine over http on
127.0.0.1 (`hook_http.py`, with the secret of `endpoint.py`, made here; `daemon.py` passes the
`gemini` events to `engine.py`) and print its answer; on any trouble the Python client
(`hook_client.py`, over the engine's Unix socket) runs instead. Any failure prints nothing, so
Gemini keeps its own output (recorded for `ctxview doctor`).

- `AfterTool`, every tool but the tail call: the rules' text, given back as a tail call of the
  MCP tool `mcp_ctxview_show`; for `mcp_ctxview_recall`, the recall of the session's id.
- `BeforeModel` (and `PreCompress` for /compress, to say which kind): a compression's boundary,
  and the files-read table after its summary in the requests that hold it (`compression.py`);
  bash hands the request on only when it holds a summary.
- `BeforeTool` of `invoke_agent`: a sub-agent runs, whose calls keep Gemini's own output.
- `mcpServers.ctxview`: `show_server.py` (`show`, `recall`), trusted (its calls ask no
  confirmation).

`uninstall` puts the person's own bytes back (the sidecar `ctxview-install.json` beside the
settings file keeps them, as Claude Code's install does), or takes ctxview's entries out of a
file changed since.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ctxview.agents import endpoint, hook_client
from ctxview.agents.claude_code.install import Plan, ctxview_python, store_of
from ctxview.agents.gemini.compression import ACK_JSON
from ctxview.agents.gemini.engine import AGENT_TOOL, SHOW_TOOL, TASK_DONE_TOOL

SIDECAR = "ctxview-install.json"
SERVER = "ctxview"
HOOK_NAME = "ctxview"
EVENTS = ("AfterTool", "BeforeTool", "PreCompress", "BeforeModel")
TIMEOUT_MS = 5000  # above the hook client's own 2 s budget
# AfterTool: every tool but the tail call itself and a sub-agent's `complete_task` (regular
# expressions); BeforeTool: a sub-agent starting; PreCompress: /compress only (an exact
# trigger), not the "auto" one fired before every turn. BeforeModel takes no matcher in 0.61.
MATCHERS = {"AfterTool": f"^(?!({SHOW_TOOL}|{TASK_DONE_TOOL})$)",
            "BeforeTool": f"^{AGENT_TOOL}$", "PreCompress": "manual"}  # fmt: skip


def settings_path(scope: str, cwd: Path, home: Path) -> Path:
    return (home if scope == "user" else cwd) / ".gemini" / "settings.json"


def hook_command(store: Path, python: str | None = None) -> str:
    """The bash client (`hook_client.sh`), sourced into the `bash -c` Gemini runs the hook in:
    it reaches the engine over http with bash's builtins alone, so a tool call starts no process
    (a Python start was about 20 ms of the 23 ctxview added per call), and hands anything
    unusual to the Python client, `python_command`."""
    script = Path(__file__).absolute().parent / "hook_client.sh"
    return shlex.join([".", str(script), python or ctxview_python(), str(store)])


def python_command(store: Path, python: str | None = None) -> str:
    """The Python client, imported from its folder rather than run as a script: Python then
    loads its cached bytecode instead of compiling it on every hook (about 1.5 ms of the 15 a
    hook's process takes here); `-I` keeps the hook's working folder (the project's) off the
    module path, as running the file did, and `-S` loads no site. `hook_client.sh` runs the
    same."""
    folder = str(Path(hook_client.__file__).absolute().parent)
    code = f"import sys;sys.path.insert(0,{folder!r});import hook_client as h;h.main(sys.argv[1:])"
    return shlex.join([python or ctxview_python(), "-I", "-S", "-c", code, "gemini", "--store",
                       str(store)])  # fmt: skip


def before_model_command(store: Path, python: str | None = None) -> str:
    """BeforeModel runs before every model call and 0.61 gives it no matcher, so bash (which
    Gemini runs every command hook in) hands the request to the hook client only when it holds
    Gemini's answer to a summary (`compression.py`). Read with `read -N` (large reads, no `cat`
    process: 4 ms less on a 60 KB request; `cat` on a bash before 4.1), matched as bytes."""
    return ("LC_ALL=C; if ((BASH_VERSINFO * 100 + BASH_VERSINFO[1] >= 401)); then read -r -N "
            f"1073741824 d; else d=$(cat); fi; case $d in *{shlex.quote(ACK_JSON)}*) "
            f'{hook_command(store, python)} <<<"$d";; esac')  # fmt: skip


def show_server() -> dict[str, Any]:
    return {"command": ctxview_python(), "args": ["-m", "ctxview.agents.gemini.show_server"],
            "trust": True}  # fmt: skip


def _entry(event: str, store: Path) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "name": HOOK_NAME,
                                        "command": before_model_command(store)
                                        if event == "BeforeModel"
                                        else hook_command(store),
                                        "timeout": TIMEOUT_MS}]}  # fmt: skip
    if event in MATCHERS:
        group = {"matcher": MATCHERS[event], **group}
    return group


def _is_ours(group: Any) -> bool:
    inner = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(inner, list) and any(
        isinstance(h, dict) and h.get("name") == HOOK_NAME and "hook_client" in str(
            h.get("command", "")) for h in inner)  # fmt: skip


def install(scope: str, cwd: Path, home: Path, store: Path | None = None) -> Plan:
    path = settings_path(scope, cwd, home)
    plan = Plan(path.parent / SIDECAR)
    data = plan.load(path)
    pinned = store_of(store)
    endpoint.ensure(pinned)  # the port and secret the bash client reaches the engine with
    hooks = data.setdefault("hooks", {})
    for event in EVENTS:
        groups = [g for g in hooks.get(event, []) if not _is_ours(g)]
        want = _entry(event, pinned)
        if [g for g in hooks.get(event, []) if _is_ours(g)] != [want]:
            plan.changes.append(f"added the {event} hook to {path}")
        hooks[event] = [*groups, want]
    servers = data.setdefault("mcpServers", {})
    if servers.get(SERVER) != show_server():
        servers[SERVER] = show_server()
        plan.changes.append(f"added the MCP server {SERVER} to {path}")
    return plan


def uninstall(scope: str, cwd: Path, home: Path) -> Plan:
    path = settings_path(scope, cwd, home)
    plan = Plan(path.parent / SIDECAR, installing=False)
    if not path.exists():
        return plan
    data = plan.load(path)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if isinstance(groups, list) and any(_is_ours(g) for g in groups):
                plan.changes.append(f"removed the {event} hook from {path}")
                hooks[event] = [g for g in groups if not _is_ours(g)]
                if not hooks[event]:
                    del hooks[event]
        if not hooks:
            del data["hooks"]
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and SERVER in servers:
        del servers[SERVER]
        plan.changes.append(f"removed the MCP server {SERVER} from {path}")
        if not servers:
            del data["mcpServers"]
    return plan
