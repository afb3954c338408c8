"""`ctxview hook EVENT`: the command hook. `ctxview install claude-code` writes it for
SessionStart only, which starts the resident engine (`daemon.py`, one per store) when none is
running; every other event is an http hook the engine answers itself (`hook_http.py`), with no
process started. It hands the hook input, as the bytes it got, to the engine over a Unix socket,
and prints the engine's answer as it comes (older installs run it for every event; it works).

Every import here is paid on every tool call, so this file runs on its own with the standard
library's C modules only (`_socket`, `_signal`, `zlib`: no `json`, `socket` or `signal`, whose
`re` and `enum` imports alone cost more than the rest): `ctxview install claude-code` writes
`python -S <this file> EVENT` (no site, no package), the leanest start Python has. `python -m
ctxview.agents.hook_client` and `ctxview hook` work too.

Never breaks the agent: any failure (no engine, a locked store, the 2 s budget passed, a bug,
an input it does not know) prints nothing and exits 0, so Claude Code keeps its own output; the
failure is recorded beside the store for `ctxview doctor`. `CTXVIEW_HOOK_FAIL=1` forces one.
"""

from __future__ import annotations

import _socket
import os
import sys
import time

TYPE_CHECKING = False  # `typing` alone would double this hook's start-up (mypy reads it as True)
if TYPE_CHECKING:
    import signal as _signal  # the same functions and constants; typeshed has no `_signal`
    from pathlib import Path
else:
    import _signal

# The checker follows the package's import; as a file, the same module is found beside this one.
if __package__ or TYPE_CHECKING:
    from ctxview.agents.engine_socket import private_folder, socket_file
else:  # run as a file (`python -S hook_client.py`): its neighbour, standard library only
    from engine_socket import private_folder, socket_file

BUDGET = 2.0  # seconds Claude Code's hook may take, all in
_MARGIN = 0.25  # kept back for exiting cleanly
EVENTS = {"post-tool-use": "PostToolUse", "post-tool-use-failure": "PostToolUseFailure",
          "session-start": "SessionStart", "pre-compact": "PreCompact",
          "session-end": "SessionEnd", "stop": "Stop",
          "user-prompt-submit": "UserPromptSubmit",
          "subagent-stop": "SubagentStop"}  # fmt: skip


class Budget(Exception):
    """The hook's time budget ran out."""


def default_store() -> Path:
    from pathlib import Path

    return Path(_default_store())


def _default_store() -> str:
    # As store/paths.py decides (importing it would load the store package and its async
    # SQLite driver): this file touches no SQLite, it only finds the engine's socket beside the
    # store; tests/agents/test_claude_hooks.py checks that the two agree.
    if env := os.environ.get("CTXVIEW_STORE"):
        return os.path.expanduser(env)
    state = os.environ.get("XDG_STATE_HOME")
    base = os.path.expanduser(state) if state else os.path.join(
        os.path.expanduser("~"), ".local", "state")  # fmt: skip
    return os.path.join(base, "ctxview", "store.db")


def socket_path(store: str | os.PathLike[str]) -> Path:
    from pathlib import Path

    return Path(socket_file(os.fspath(store)))


def event_name(arg: str) -> str:
    return EVENTS.get(arg, arg)


def main(argv: list[str]) -> int:
    start = time.monotonic()
    store: str | None = None
    event = event_name(argv[0]) if argv else "?"
    raw = b""

    def _out_of_time(signum: int, frame: object) -> None:
        raise Budget(f"the {BUDGET:g} s budget ran out")

    _signal.signal(_signal.SIGALRM, _out_of_time)
    _signal.setitimer(_signal.ITIMER_REAL, BUDGET - _MARGIN / 2)
    try:
        store = _store_arg(argv) or _default_store()
        raw = sys.stdin.buffer.read()
        if failed := _arg(argv, "--failed"):
            # Gemini's bash client (gemini/hook_client.sh): the engine took the request over
            # http and its answer did not come; asking again could store the call twice.
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _record(store, event, failed, raw)
            return 0
        if os.environ.get("CTXVIEW_HOOK_FAIL"):
            # The engine is started all the same: Claude Code's http hooks then reach it, and
            # fail there as forced (the header they carry says so).
            ask(store, "_ping", b"", deadline=start + BUDGET - _MARGIN)
            raise RuntimeError("failure forced by CTXVIEW_HOOK_FAIL")
        answer = ask(store, event, raw, deadline=start + BUDGET - _MARGIN)
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        if answer:  # the engine's JSON output; empty for none (or a failure it recorded)
            sys.stdout.buffer.write(answer)
            sys.stdout.flush()
    except BaseException as exc:  # a hook must never break the agent
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        try:  # noqa: SIM105 - contextlib would be one more import on every call
            _record(store, event, f"{type(exc).__name__}: {exc}", raw)
        except BaseException:
            pass
    return 0


def _record(store: str | None, event: str, what: str, raw: bytes) -> None:
    """Record a failure, with what it is about from the hook input when it was read (parsed
    only here, on the failure path)."""
    if __package__ or TYPE_CHECKING:
        from ctxview.agents import failures
    else:  # run as a file: its neighbour, also standard library only
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import failures
    event, detail = failures.about(raw, event)
    failures.record(store, event, what, detail)


def _store_arg(argv: list[str]) -> str | None:
    found = _arg(argv, "--store")
    return None if found is None else os.path.expanduser(found)


def _arg(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def ask(store: str, event: str, raw: bytes, *, deadline: float) -> bytes:
    """The engine's answer to one hook event; starts the engine when none is running."""
    path = socket_file(store)
    started = False
    while True:
        try:
            return _exchange(path, event.encode() + b"\n" + raw, deadline)
        except (FileNotFoundError, ConnectionRefusedError):
            if not started:
                spawn(store)
                started = True
            if time.monotonic() > deadline:
                raise Budget("the engine did not start in time") from None
            time.sleep(0.02)


def _exchange(path: str, request: bytes, deadline: float) -> bytes:
    """One request per connection: the event's name, a newline, the hook input; the answer is
    everything the engine writes before it closes."""
    private_folder(os.path.dirname(path))
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        s.connect(path)
        s.sendall(request)
        s.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(1 << 16):
            chunks.append(chunk)
    finally:
        s.close()
    return b"".join(chunks)


def spawn(store: str) -> None:
    """Start the resident engine for `store`, detached (it outlives this hook, and exits by
    itself after a while with nothing to do)."""
    import subprocess  # only here: its import is a third of the hook's start-up

    subprocess.Popen(
        [sys.executable, "-m", "ctxview.agents.daemon", "--store", store],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )  # fmt: skip


def stop(store: str | os.PathLike[str], timeout: float = 10.0) -> bool:
    """Ask the store's resident engine to exit, and return once it has (its store closed, its
    process ended); False when none was running. TimeoutError if it is still there after
    `timeout` seconds."""
    try:
        answer = _exchange(socket_file(os.fspath(store)), b"_shutdown\n", time.monotonic() + 2)
    except OSError:
        return False
    # The engine's pid and its supervisor's (an older engine answers its own, or nothing).
    pids = [int(p) for p in answer.split() if p.isdigit()]
    end = time.monotonic() + timeout
    for pid in pids:
        while _running(pid):
            if time.monotonic() > end:
                raise TimeoutError(f"the engine (pid {pid}) did not exit in {timeout:g} s")
            time.sleep(0.01)
    return True


def _running(pid: int) -> bool:
    """Whether process `pid` still runs; a zombie has ended (its files are closed)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel (a zombie counts as running there)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


if __name__ == "__main__":  # the form `ctxview install claude-code` writes: no CLI to load
    raise SystemExit(main(sys.argv[1:]))
