"""`ctxview hook EVENT`: what Claude Code runs for each hook event. Standard library only, so
the process that Claude Code waits for starts in a few tens of milliseconds: it hands the hook
input to the resident engine (`daemon.py`, started on first use, one per store) over a Unix
socket and prints the answer.

Never breaks the agent: any failure (no engine, a locked store, the 2 s budget passed, a bug,
an input it does not know) prints nothing and exits 0, so Claude Code keeps its own output; the
failure is recorded beside the store for `ctxview doctor`. `CTXVIEW_HOOK_FAIL=1` forces one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import failures

BUDGET = 2.0  # seconds Claude Code's hook may take, all in
_MARGIN = 0.25  # kept back for exiting cleanly
EVENTS = {"post-tool-use": "PostToolUse", "session-start": "SessionStart",
          "pre-compact": "PreCompact", "session-end": "SessionEnd", "stop": "Stop"}  # fmt: skip


class Budget(Exception):
    """The hook's time budget ran out."""


def default_store() -> Path:
    # As store/paths.py decides (importing it would load the store package and aiosqlite);
    # tests/agents/test_claude_hooks.py checks that the two agree.
    if env := os.environ.get("CTXVIEW_STORE"):
        return Path(env).expanduser()
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state else Path.home() / ".local" / "state"
    return base / "ctxview" / "store.db"


def socket_path(store: Path) -> Path:
    """Short and per store (a Unix socket path is limited to ~100 bytes)."""
    digest = hashlib.sha256(str(store.resolve()).encode()).hexdigest()[:16]
    return Path(f"/tmp/ctxview-{os.getuid()}") / f"{digest}.sock"


def event_name(arg: str) -> str:
    return EVENTS.get(arg, arg)


def main(argv: list[str]) -> int:
    start = time.monotonic()
    store: Path | None = None
    event = event_name(argv[0]) if argv else "?"
    detail: dict[str, Any] = {}

    def _out_of_time(signum: int, frame: Any) -> None:
        raise Budget(f"the {BUDGET:g} s budget ran out")

    signal.signal(signal.SIGALRM, _out_of_time)
    signal.setitimer(signal.ITIMER_REAL, BUDGET - _MARGIN / 2)
    try:
        store = _store_arg(argv) or default_store()
        raw = sys.stdin.buffer.read()
        payload = json.loads(raw)
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        event = str(payload.get("hook_event_name") or event)
        detail = {k: payload[k] for k in ("session_id", "tool_name", "tool_use_id")
                  if isinstance(payload.get(k), str)}  # fmt: skip
        if os.environ.get("CTXVIEW_HOOK_FAIL"):
            raise RuntimeError("failure forced by CTXVIEW_HOOK_FAIL")
        answer = ask(store, event, payload, deadline=start + BUDGET - _MARGIN)
        signal.setitimer(signal.ITIMER_REAL, 0)
        if answer.get("error"):
            return 0  # the engine recorded it
        output = answer.get("output")
        if output is not None:
            sys.stdout.write(json.dumps(output, ensure_ascii=False))
            sys.stdout.flush()
    except BaseException as exc:  # a hook must never break the agent
        signal.setitimer(signal.ITIMER_REAL, 0)
        with contextlib.suppress(BaseException):
            failures.record(store, event, f"{type(exc).__name__}: {exc}", detail)
    return 0


def _store_arg(argv: list[str]) -> Path | None:
    for i, a in enumerate(argv):
        if a == "--store" and i + 1 < len(argv):
            return Path(argv[i + 1]).expanduser()
        if a.startswith("--store="):
            return Path(a.split("=", 1)[1]).expanduser()
    return None


def ask(store: Path, event: str, payload: dict[str, Any], *, deadline: float) -> dict[str, Any]:
    """The engine's answer to one hook event; starts the engine when none is running."""
    path = socket_path(store)
    started = False
    while True:
        try:
            return _exchange(path, {"event": event, "payload": payload}, deadline)
        except (FileNotFoundError, ConnectionRefusedError):
            if not started:
                spawn(store)
                started = True
            if time.monotonic() > deadline:
                raise Budget("the engine did not start in time") from None
            time.sleep(0.02)


def _exchange(path: Path, request: dict[str, Any], deadline: float) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        s.connect(str(path))
        s.sendall(json.dumps(request, ensure_ascii=False).encode() + b"\n")
        chunks = []
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    answer = json.loads(b"".join(chunks) or b"{}")
    return answer if isinstance(answer, dict) else {}


def spawn(store: Path) -> None:
    """Start the resident engine for `store`, detached (it outlives this hook, and exits by
    itself after a while with nothing to do)."""
    subprocess.Popen(
        [sys.executable, "-m", "ctxview.backend.agents.daemon", "--store", str(store)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )  # fmt: skip


def stop(store: Path) -> bool:
    """Ask the store's resident engine to exit; False when none was running."""
    try:
        _exchange(socket_path(store), {"event": "_shutdown", "payload": {}}, time.monotonic() + 2)
    except OSError:
        return False
    return True


if __name__ == "__main__":  # the form `ctxview install claude-code` writes: no CLI to load
    raise SystemExit(main(sys.argv[1:]))
