"""The workspace race of issue 8 point 2: a second process swaps a path between a file (or a
folder) inside the workspace and a symlink to a folder outside it, as fast as it can, while the
engine runs one tool on that path again and again. Every call is followed by a look outside:
any change there is an outside write (counted and put back), any outside text in a result or
brought into the workspace is an outside read.

Used by tests/test_workspace_race.py (a few seconds per tool) and bench/bench_workspace_race.py
(ten seconds or more per tool).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxview.backend.session import Session
from ctxview.backend.store.writer import Writer

INSIDE = "line\nx\n"
VICTIM = "line\nSECRET\n"  # outside/t.txt: an edit's old_string matches it too
MARK = "SECRET"  # in the victim's text and in a file name outside: seen in a result = a read

# The swapper, a second process. file mode: ws/t.txt is a fresh regular file, then a symlink
# to ../outside/t.txt, each put in place by an atomic rename. dir mode: ws/d is a folder holding
# t.txt, then a symlink to ../outside, exchanged atomically (renameat2 RENAME_EXCHANGE).
SWAPPER = r"""
import ctypes, os, sys
ws, swap, mode, inside = sys.argv[1:5]
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
else:
    d, alt = os.path.join(ws, "d"), os.path.join(swap, "alt")
    while True:
        exchange(d, alt)  # d: the symlink
        for name in os.listdir(alt):  # the real folder, now aside: back to one fresh t.txt
            if name != "t.txt":
                os.unlink(os.path.join(alt, name))
        fresh(os.path.join(alt, "t.txt"))
        exchange(d, alt)  # d: the real folder
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

    def line(self) -> str:
        return (f"{self.case:12} {self.mode:4} {self.calls:7} calls ({self.answered} answered) "
                f"in {self.seconds:5.1f} s: {self.outside_writes} outside writes, "
                f"{self.outside_reads} outside reads")  # fmt: skip


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


async def race(tmp: Path, case: str, mode: str, seconds: float) -> Figures:
    """Run `case` against the swapper for `seconds`; the figures."""
    ws, outside, swap = tmp / "ws", tmp / "outside", tmp / "swap"
    for d in (ws, outside, swap):
        d.mkdir()
    baseline = _make_outside(outside)
    if mode == "file":
        (ws / "t.txt").write_text(INSIDE)
    else:
        (ws / "d").mkdir()
        (ws / "d" / "t.txt").write_text(INSIDE)
        os.symlink("../outside", swap / "alt")  # ws/d's other self (relative to ws/)
    tool, args = cases(mode)[case]
    figures = Figures(case, mode)
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws), str(swap), mode, INSIDE],
                               stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        async with await Writer.open(tmp / "s.db") as writer:
            session = await Session.start(writer, ws, title="race")
            time.sleep(0.05)  # the swapper is under way
            start = time.monotonic()
            while time.monotonic() - start < seconds:
                shown = await session.run(tool, args)
                figures.calls += 1
                if session.last is not None and session.last.rkind != "error":
                    figures.answered += 1
                leaked = MARK in shown
                for extra in ("m.txt", "d/m.txt", "d/new.txt"):
                    with _quiet():
                        if MARK in (ws / extra).read_text():
                            leaked = True
                        os.unlink(ws / extra)
                figures.outside_reads += leaked
                now = _outside_state(outside)
                if now != baseline:
                    figures.outside_writes += 1
                    baseline = _make_outside(outside)
            figures.seconds = time.monotonic() - start
            await session.end()
    finally:
        swapper.send_signal(signal.SIGKILL)
        swapper.wait()
    return figures


class _quiet:
    """Ignore a missing or swapped path while looking."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        return kind is not None and issubclass(kind, OSError)
