"""The runner of one bash call: the only process the engine starts for it, the reaper of all.

    python -I -S bash_runner.py fg|bg LOG ENGINE_PID COMMAND

It makes itself a child subreaper (Linux PR_SET_CHILD_SUBREAPER) before starting `bash -c
COMMAND`, so every process the command starts stays below it whatever it does: a `nohup` or
`setsid` child, a double-forked daemon whose parent exits, each is re-parented to the runner,
never to init. That is why it is used rather than a process group (setsid leaves the group), a
marker variable in the environment (`env -i` drops it) or a cgroup (needs a delegated cgroup
tree, which a container or a user session often lacks). When bash exits:

- fg: every process still below the runner is killed (SIGKILL, rounds until none is left, so
  one forked meanwhile is found in the next round), so the output pipe closes at once;
- bg: they are left running and listed, and the runner stays, their reaper, until SIGTERM (the
  session ends) or until they have all exited; their output goes to LOG, never a pipe.

SIGTERM (the call's timeout, the session's end) or the engine's death (PR_SET_PDEATHSIG) kills
them all. Control messages go to the engine as JSON lines on stderr: `{"pid"}` at the start,
then `{"exit", "ended"}` (fg), `{"exit", "background"}` (bg) or `{"stopped"}`. Standard library
only, run by its path: it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


class Stop(Exception):
    pass


def _stop(_sig: int, _frame: object) -> None:
    raise Stop


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        failed: int = ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
        return failed == 0
    except (OSError, AttributeError):
        return False  # not Linux: the process group is all there is


def _below(me: int) -> dict[int, str]:
    """Every process below `me`, pid -> state letter (Z for a zombie), from /proc."""
    parent: dict[int, int] = {}
    state: dict[int, str] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(name)
        state[pid], parent[pid] = fields[0].decode(), int(fields[1])
    found: dict[int, str] = {}
    frontier = [me]
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        for kid in children.get(frontier.pop(), []):
            if kid not in found:
                found[kid] = state[kid]
                frontier.append(kid)
    return found


def _name(pid: int) -> str:
    """The process's command line, shortened; a process with none to read (one exiting, whose
    memory is already gone, or between fork and exec) by its command's name, `(sleep)`."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            text = " ".join(f.read().decode(errors="replace").replace("\0", " ").split())
    except OSError:
        text = ""
    if not text:
        try:
            with open(f"/proc/{pid}/comm", "rb") as f:
                comm = f.read().decode(errors="replace").strip()
        except OSError:
            comm = ""
        return f"({comm})" if comm else str(pid)
    return text if len(text) <= 60 else text[:57] + "..."


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill(pid: int, below: dict[int, str], me: int) -> None:
    """SIGKILL `pid` if it is still the process found below the runner: a pidfd pins it, then
    its parent is checked, so a pid freed and reused meanwhile by another process is spared."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        return
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        if ppid == me or ppid in below:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except (OSError, IndexError, ValueError):
        pass
    finally:
        os.close(fd)


def _kill_all(me: int, group: int, named: dict[int, str] | None = None) -> None:
    """SIGKILL everything below the runner, round after round, until nothing is left. `named`
    gets the name of each process first found in a later round (one the command's children
    started after the first look), so that what was ended is all said."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # the command's own group first, in one call
            os.killpg(group, signal.SIGKILL)
        below = _below(me)
        for pid, state in below.items():
            if state != "Z":
                if named is not None and pid not in named:
                    named[pid] = _name(pid)
                _kill(pid, below, me)
        _reap()
        if not below:
            return
        time.sleep(0.002)


def main() -> int:
    mode, log, engine, command = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    me = os.getpid()
    ctl = os.fdopen(2, "w", buffering=1)

    def say(**msg: object) -> None:
        with contextlib.suppress(OSError):
            ctl.write(json.dumps(msg) + "\n")

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _stop)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != engine:
        return 0  # the engine went before the line above
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC) if mode == "bg" else 1
    null = os.open(os.devnull, os.O_RDWR)
    pid = os.fork()
    if pid == 0:  # bash: stdin empty, stdout and stderr the output, nothing else open
        try:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
                signal.signal(sig, signal.SIG_DFL)  # Python ignores SIGPIPE; bash must not
            os.setsid()  # its own group and session, as a command run from a terminal-less shell
            os.dup2(null, 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.closerange(3, 1 << 16)
            os.execvp("bash", ["bash", "-c", command])
        finally:
            os._exit(127)
    os.dup2(null, 1)  # the runner keeps no end of the output: it closes with the command's tree
    if out != 1:
        os.close(out)
    say(pid=pid)
    try:
        while True:
            done, status = os.waitpid(-1, 0)  # orphans re-parented here are reaped too
            if done == pid:
                break
        code = os.waitstatus_to_exitcode(status)
        left = {p: _name(p) for p, state in _below(me).items() if state != "Z"}
        if mode == "fg" or not left:
            _kill_all(me, pid, left)
            say(exit=code, ended=sorted(left.values()))
            return 0
        say(exit=code, background=sorted([p, n] for p, n in left.items()))
        while True:  # their reaper until the session ends or they have all exited
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return 0
    except Stop:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _kill_all(me, pid)
        say(stopped=True)
        return 0


if __name__ == "__main__":
    sys.exit(main())
