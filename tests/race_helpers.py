"""The workspace race of issue 8 point 2: a second process swaps a path between a file (or a
folder) inside the workspace and a symlink to a folder outside it, as fast as it can, while the
engine runs one tool on that path again and again. Every call is followed by a look outside:
any change there is an outside write (counted and put back), any outside text in a result or
brought into the workspace is an outside read.

Used by tests/test_workspace_race.py (every case at once, each with its own workspace, outside
folder and swapper, in one window of ten seconds or more: `race_all`) and
bench/bench_workspace_race.py (one case after another, ten seconds or more each: `race`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxview.engine.session import Session
from ctxview.store.writer import Writer

INSIDE = "line\nx\n"
VICTIM = "line\nSECRET\n"  # outside/t.txt: an edit's old_string matches it too
MARK = "SECRET"  # in the victim's text and in a file name outside: seen in a result = a read

# The swapper, a second process. file mode: ws/t.txt is a fresh regular file, then a symlink
# to ../outside/t.txt, each put in place by an atomic rename. dir mode: ws/d is a folder holding
# t.txt, then a symlink to ../outside, exchanged atomically (renameat2 RENAME_EXCHANGE).
# It says "ready" after its first swap, "enough" once it has made the swaps it is told to (a
# loaded machine gives it fewer in the window) and, on SIGTERM, how many swaps it made.
SWAPPER = r"""
import ctypes, os, signal, sys
ws, swap, mode, inside = sys.argv[1:5]
enough = int(sys.argv[5]) if len(sys.argv) > 5 else 0
swaps = 0
def stop(*_):
    sys.stdout.write(f"{swaps}\n")
    sys.stdout.flush()
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
def exchange(a, b):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
def fresh(path):
    with open(path, "w") as f:
        f.write(inside)
if mode == "file":
    target, f, l = os.path.join(ws, "t.txt"), os.path.join(swap, "f"), os.path.join(swap, "l")
    while True:
        fresh(f)
        os.replace(f, target)
        try:
            os.symlink("../outside/t.txt", l)
        except FileExistsError:
            pass
        os.replace(l, target)
        swaps += 2
        if swaps == 2:
            print("ready", flush=True)
        if swaps == max(2, enough + enough % 2):
            print("enough", flush=True)
else:
    d, alt = os.path.join(ws, "d"), os.path.join(swap, "alt")
    while True:
        exchange(d, alt)  # d: the symlink
        for name in os.listdir(alt):  # the real folder, now aside: back to one fresh t.txt
            if name != "t.txt":
                try:
                    os.unlink(os.path.join(alt, name))
                except FileNotFoundError:  # a tool's temporary file, renamed meanwhile
                    pass
        fresh(os.path.join(alt, "t.txt"))
        exchange(d, alt)  # d: the real folder
        swaps += 2
        if swaps == 2:
            print("ready", flush=True)
        if swaps == max(2, enough + enough % 2):
            print("enough", flush=True)
"""


def _patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


def cases(mode: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """tool case -> (tool, args) on the swapped path."""
    p = "t.txt" if mode == "file" else "d/t.txt"
    q = "m.txt" if mode == "file" else "d/m.txt"
    out: dict[str, tuple[str, dict[str, Any]]] = {
        "write": ("write", {"path": p, "content": "new\n"}),
        "edit": ("edit", {"path": p, "old_string": "line", "new_string": "LINE"}),
        "multiedit": ("multiedit", {"path": p, "edits": [
            {"old_string": "line", "new_string": "L1"}, {"old_string": "L1", "new_string": "L2"}]}),
        "apply_patch": ("apply_patch", {"patch": _patch(f"*** Update File: {p}", "@@", "-line",
                                                        "+LINE")}),
        "move": ("apply_patch", {"patch": _patch(f"*** Update File: {p}", f"*** Move to: {q}",
                                                 "@@", "-line", "+LINE")}),
        "delete": ("apply_patch", {"patch": _patch(f"*** Delete File: {p}")}),
        "read": ("read", {"path": p}),
        "grep": ("grep", {"pattern": "SECRET|line"}),
    }  # fmt: skip
    if mode == "dir":
        out["add"] = ("apply_patch", {"patch": _patch("*** Add File: d/new.txt", "+added")})
        out["list"] = ("list", {"path": "."})
        out["glob"] = ("glob", {"pattern": "**/*.txt"})
    return out


@dataclass
class Figures:
    case: str
    mode: str
    calls: int = 0
    answered: int = 0  # calls that were not an error result
    outside_writes: int = 0
    outside_reads: int = 0
    seconds: float = 0.0
    swaps: int = 0  # the swapper's renames in that time

    stopped: str = ""  # the swapper's error, when it ended before it was told to

    def line(self) -> str:
        return (f"{self.case:12} {self.mode:4} {self.calls:7} calls ({self.answered} answered) "
                f"in {self.seconds:5.1f} s, {self.swaps:8} swaps: {self.outside_writes} outside "
                f"writes, {self.outside_reads} outside reads"
                + (f"; the swapper stopped: {self.stopped}" if self.stopped else ""))  # fmt: skip


def _outside_state(outside: Path) -> dict[str, tuple[int, int, bytes]]:
    state = {}
    for entry in os.scandir(outside):
        st = entry.stat(follow_symlinks=False)
        state[entry.name] = (st.st_ino, st.st_mtime_ns, Path(entry.path).read_bytes())
    return state


def _make_outside(outside: Path) -> dict[str, tuple[int, int, bytes]]:
    for entry in os.scandir(outside):
        os.unlink(entry.path)
    (outside / "t.txt").write_text(VICTIM)
    (outside / f"{MARK}.txt").write_text(VICTIM)
    return _outside_state(outside)


class _Arena:
    """One case's workspace, outside folder and swapper."""

    def __init__(self, tmp: Path, case: str, mode: str, min_swaps: int = 0) -> None:
        self.tmp, self.ws, self.outside = tmp, tmp / "ws", tmp / "outside"
        self.said: list[str] = []  # the swapper's lines after "ready"
        swap = tmp / "swap"
        for d in (self.ws, self.outside, swap):
            d.mkdir(parents=True)
        self.baseline = _make_outside(self.outside)
        if mode == "file":
            (self.ws / "t.txt").write_text(INSIDE)
        else:
            (self.ws / "d").mkdir()
            (self.ws / "d" / "t.txt").write_text(INSIDE)
            os.symlink("../outside", swap / "alt")  # ws/d's other self (relative to ws/)
        self.tool, self.args = cases(mode)[case]
        self.figures = Figures(case, mode)
        with open(tmp / "swapper.err", "w") as err:  # why a swapper stopped, if one does
            self.swapper = subprocess.Popen(
                [sys.executable, "-c", SWAPPER, str(self.ws), str(swap), mode, INSIDE,
                 str(min_swaps)],
                stdout=subprocess.PIPE, stderr=err, text=True)  # fmt: skip

    def wait_ready(self) -> None:
        assert self.swapper.stdout is not None
        if self.swapper.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the swapper of {self.figures.case} did not start")
        out = self.swapper.stdout
        self._reading = threading.Thread(target=lambda: self.said.extend(s.strip() for s in out))
        self._reading.start()

    async def run(self, session: Session, start: float, seconds: float, min_calls: int = 0) -> None:
        """Calls for `seconds`, and on until there have been `min_calls` and the swapper has said
        "enough" (a loaded machine gives each case fewer in the window), never past six windows."""
        figures = self.figures

        def more() -> bool:
            took = time.monotonic() - start
            short = figures.calls < min_calls or "enough" not in self.said
            return took < seconds or (short and took < 6 * seconds)

        while more():
            shown = await session.run(self.tool, self.args)
            figures.calls += 1
            if session.last is not None and session.last.rkind != "error":
                figures.answered += 1
            leaked = MARK in shown
            for extra in ("m.txt", "d/m.txt", "d/new.txt"):
                with _quiet():
                    if MARK in (self.ws / extra).read_text():
                        leaked = True
                    os.unlink(self.ws / extra)
            figures.outside_reads += leaked
            now = _outside_state(self.outside)
            if now != self.baseline:
                figures.outside_writes += 1
                self.baseline = _make_outside(self.outside)
            await asyncio.sleep(0)  # the other cases' turns, when several run at once
        figures.seconds = time.monotonic() - start

    def stop(self) -> None:
        """End the swapper; its count of swaps into the figures."""
        if self.swapper.poll() is None:
            self.swapper.send_signal(signal.SIGTERM)
        else:
            err = (self.tmp / "swapper.err").read_text().strip().splitlines()
            self.figures.stopped = err[-1] if err else f"exit {self.swapper.returncode}"
        try:
            self.swapper.wait(timeout=10)
            if hasattr(self, "_reading"):
                self._reading.join(timeout=10)
            self.figures.swaps = int(self.said[-1]) if self.said else 0
        except (subprocess.TimeoutExpired, ValueError):
            self.swapper.kill()
            self.swapper.wait()


async def race_all(runs: list[tuple[Path, str, str]], seconds: float, min_calls: int = 0,
                   min_swaps: int = 0) -> list[Figures]:  # fmt: skip
    """Run every (folder, case, mode) of `runs` at once, each against its own swapper, in one
    window of `seconds` (longer for a case until it has made `min_calls` and its swapper
    `min_swaps`); their figures."""
    arenas: list[_Arena] = []
    try:
        for tmp, case, mode in runs:
            arenas.append(_Arena(tmp, case, mode, min_swaps))
        for arena in arenas:
            arena.wait_ready()
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for arena in arenas:
                writer = await stack.enter_async_context(await Writer.open(arena.tmp / "s.db"))
                sessions.append(await Session.start(writer, arena.ws, title="race"))
            start = time.monotonic()
            pairs = zip(arenas, sessions, strict=True)
            await asyncio.gather(*(arena.run(session, start, seconds, min_calls)
                                   for arena, session in pairs))  # fmt: skip
            for session in sessions:
                await session.end()
    finally:
        for arena in arenas:
            arena.stop()
    return [arena.figures for arena in arenas]


async def race(tmp: Path, case: str, mode: str, seconds: float) -> Figures:
    """Run `case` against the swapper for `seconds`; the figures."""
    return (await race_all([(tmp, case, mode)], seconds))[0]


class _quiet:
    """Ignore a missing or swapped path while looking."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        return kind is not None and issubclass(kind, OSError)
