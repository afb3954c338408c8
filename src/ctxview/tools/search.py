"""list, glob and grep over the workspace: plain text outputs, sorted so a re-run compares equal.

The scan runs in a worker process, never on the event loop: a regular expression can take
exponential time (`(a+)+$` on a line of `a`s ending in `!`), and Python's `re` holds the GIL for
the whole of one match, so neither the loop nor a thread of the engine could stop it. A worker
can be killed: each call has a time budget (`search.timeout_seconds`); at the deadline the worker
is killed and the call answers with what it had found, saying it stopped early. Workers are kept
for the next call (one per concurrent call) and end with the engine. Folders are walked from
directory fds without following links (`safe_fs.walk`), so a folder swapped for a link outside
during the walk is never entered.
"""

from __future__ import annotations

import asyncio
import atexit
import fnmatch
import json
import os
import re
import select
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from ctxview.files import safe_fs
from ctxview.tools.errors import ToolError
from ctxview.tools.workspace import Workspace

# Folders nobody wants listed or searched; a pattern naming one still reaches into it.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache"})  # fmt: skip
MAX_GREP_FILE = 10 * 1024 * 1024
EMPTY = {"list": "(empty folder)", "glob": "No files match.", "grep": "No matches."}


# The call, in the engine


def prepare(ws: Workspace, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The worker's request for a call, every argument checked (a bad one raises ToolError here,
    at once, without a worker)."""
    path = args.get("path", ".")
    req: dict[str, Any] = {"tool": tool, "root": str(ws.root)}
    if tool in ("glob", "grep"):
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("error.bad_args", detail="pattern must be a non-empty string")
        req["pattern"] = pattern
    if tool == "grep":
        req["include"] = args.get("include") or args.get("glob")
        req["ignore_case"] = bool(args.get("ignore_case", args.get("-i", False)))
        _grep_regex(req["pattern"], req["ignore_case"])
    req["base"] = ws.resolve(path)
    req["path"] = path
    return req


def finish(tool: str, lines: list[str], stopped: str | None) -> str:
    """The output: list and glob sorted (grep is in the walk's order already); then the note
    that the search stopped early, when it did."""
    if tool != "grep":
        lines.sort()
    text = "\n".join(lines) or ("" if stopped else EMPTY[tool])
    return f"{text}\n{stopped}" if text and stopped else (text or stopped or "")


async def search(ws: Workspace, tool: str, args: dict[str, Any], budget: float,
                 stopped_text: str) -> str:  # fmt: skip
    """list, glob or grep within `budget` seconds; `stopped_text` (with `{seconds}`) ends the
    output when the budget ran out first."""
    req = prepare(ws, tool, args)
    lines, stopped = await asyncio.to_thread(_POOL.run, req, budget)
    return finish(tool, lines, stopped_text.format(seconds=f"{budget:g}") if stopped else None)


# The scan, in the worker


def scan(req: dict[str, Any]) -> Iterator[str | None]:
    """The output lines of one request, as found (list and glob unsorted); None after a file's
    matches, for the worker to send what it has before the next file (whose match may never end)."""
    ws = Workspace(req["root"])
    base, path, tool = req["base"], req["path"], req["tool"]
    kind = ws.kind(base)
    rx = None
    if tool == "grep":
        rx = _grep_regex(req["pattern"], req["ignore_case"])
        if kind == "file":
            yield from _grep_file(ws, rx, base)
            return
        if kind != "dir":
            raise ToolError("error.no_file", path=path)
    elif kind != "dir":
        raise ToolError("error.not_directory" if kind else "error.no_file", path=path)
    if tool == "glob":
        rx = _glob_regex(req["pattern"])
    include = req.get("include")
    prefix = "" if base == "." else base + "/"
    with safe_fs.open_dir(ws.real, safe_fs.split(base)) as top:
        for rel, dirs, files, fd in safe_fs.walk(top):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            at = f"{rel}/" if rel else ""
            if tool == "list":
                yield from (f"{at}{d}/" for d in dirs)
                yield from (f"{at}{f}" for f in files)
            elif tool == "glob":
                assert rx is not None
                yield from (prefix + at + f for f in files if rx.fullmatch(at + f))
            else:
                assert rx is not None
                for name in files:
                    if include and not fnmatch.fnmatch(name, include):
                        continue
                    yield from _grep_file(ws, rx, prefix + at + name, fd, name)


def _grep_file(ws: Workspace, rx: re.Pattern[str], key: str, dir_fd: int | None = None,
               name: str = "") -> Iterator[str | None]:  # fmt: skip
    """The matching lines of the file `key` (opened as `name` in `dir_fd` when given)."""
    data = None
    with suppress(OSError, ToolError):
        if dir_fd is not None and not _is_link(dir_fd, name):
            data = safe_fs.read_at(dir_fd, name, MAX_GREP_FILE)
        else:  # a link is read where it leads when that is in the workspace (decision 11)
            parts = safe_fs.split(ws.resolve(key))
            if parts:
                with safe_fs.open_dir(ws.real, parts[:-1]) as d:
                    data = safe_fs.read_at(d, parts[-1], MAX_GREP_FILE)
    # None: skipped, as a FIFO (it would block the search), a device, a folder, a file gone
    # or outside, or a huge one (not source); a NUL says binary.
    if data is None or b"\0" in data[:8192]:
        return
    text = data.decode("utf-8", errors="replace")
    found = False
    for n, line in enumerate(text.split("\n"), 1):
        if rx.search(line):
            found = True
            yield f"{key}:{n}: {line.rstrip(chr(13))}"
    if found:
        yield None


def _is_link(dir_fd: int, name: str) -> bool:
    return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)


def _grep_regex(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError("error.bad_regex", detail=str(exc)) from None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex: `*` and `?` stay in one folder, `**/` spans any number of them."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                out.append("[" + pattern[i + 1 : end].replace("!", "^", 1) + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    if "/" not in pattern:  # `*.py` matches at any depth, as most agents' glob tools do
        return re.compile("(?:.*/)?" + "".join(out))
    return re.compile("".join(out))


def worker_main() -> None:
    """The worker: one JSON request a line on stdin; each output line as a JSON string, then
    `{"done": true}` or `{"error": key, "fields": {...}}`. Ends at stdin's end."""
    _die_with_parent()
    out = sys.stdout
    for raw in sys.stdin:
        req = json.loads(raw)
        last, dirty = time.monotonic(), False
        try:
            for line in scan(req):
                if line is None:  # a file's matches: sent before the next file is scanned
                    if dirty:
                        out.flush()
                        last, dirty = time.monotonic(), False
                    continue
                out.write(json.dumps(line) + "\n")
                dirty = True
                if time.monotonic() - last > 0.02:  # what was found reaches the engine
                    out.flush()
                    last, dirty = time.monotonic(), False
            out.write('{"done": true}\n')
        except ToolError as err:
            out.write(json.dumps({"error": err.key, "fields": err.fields}) + "\n")
        except (OSError, ValueError, RecursionError) as err:
            detail = (err.strerror if isinstance(err, OSError) else None) or str(err)
            out.write(json.dumps({"error": "error.failed", "fields": {"detail": detail}}) + "\n")
        out.flush()


def _die_with_parent() -> None:
    """Linux: the worker is killed when the engine (the thread that started it) goes."""
    parent = int(os.environ.get("CTXVIEW_ENGINE_PID", "0"))
    with suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if parent and os.getppid() != parent:
        os._exit(0)  # the engine had gone before the line above


# The workers, in the engine


class _Pool:
    """Idle workers, reused; one per concurrent call, a new one after each kill."""

    def __init__(self) -> None:
        self._idle: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()

    def _spawn(self) -> subprocess.Popen[bytes]:
        import ctxview

        where = str(Path(ctxview.__file__).resolve().parent.parent)
        code = (f"import sys; sys.path.insert(0, {where!r}); "
                "from ctxview.tools import search; search.worker_main()")  # fmt: skip
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", code],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            bufsize=0, start_new_session=True,  # a Ctrl-C in the terminal is the engine's
            env={**os.environ, "CTXVIEW_ENGINE_PID": str(os.getpid())},
        )  # fmt: skip

    def _take(self) -> subprocess.Popen[bytes]:
        with self._lock:
            while self._idle:
                proc = self._idle.pop()
                if proc.poll() is None:
                    return proc
        return self._spawn()

    def _give_back(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if len(self._idle) < 2:
                self._idle.append(proc)
                return
        _end(proc)

    def run(self, req: dict[str, Any], budget: float) -> tuple[list[str], bool]:
        """(output lines, stopped early); a worker that died under us is replaced once."""
        for attempt in (1, 2):
            proc = self._take()
            try:
                return self._ask(proc, req, budget)
            except _WorkerGone:
                _end(proc)
                if attempt == 2:
                    raise ToolError("error.failed", detail="the search worker ended") from None
        raise AssertionError  # not reached

    def _ask(self, proc: subprocess.Popen[bytes], req: dict[str, Any],
             budget: float) -> tuple[list[str], bool]:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(req).encode() + b"\n")
        except OSError:
            raise _WorkerGone from None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + budget
        lines: list[str] = []
        pending = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                _end(proc)  # mid-match, maybe: only a kill stops it
                return lines, True
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _WorkerGone
            *complete, pending = (pending + chunk).split(b"\n")
            for raw in complete:
                item = json.loads(raw)
                if isinstance(item, str):
                    lines.append(item)
                    continue
                self._give_back(proc)
                if "error" in item:
                    raise ToolError(item["error"], **item["fields"])
                return lines, False


class _WorkerGone(Exception):
    pass


def _end(proc: subprocess.Popen[bytes]) -> None:
    with suppress(OSError):
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        with suppress(OSError):
            if stream is not None:
                stream.close()


_POOL = _Pool()


@atexit.register
def _close_idle() -> None:
    """At the engine's exit: idle workers end on their stdin's end; none is left waiting."""
    with _POOL._lock:
        idle, _POOL._idle = _POOL._idle, []
    for proc in idle:
        _end(proc)
