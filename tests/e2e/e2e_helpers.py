"""What the end-to-end tests share: a store with a small session, the ctxview command, ports."""

from __future__ import annotations

import asyncio
import os
import shlex
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxview.engine.session import Session
from ctxview.store import Writer

CTXVIEW = str(Path(sys.executable).with_name("ctxview"))
GREETING = "Please look at the greeting module"


@dataclass
class SmallStore:
    path: Path
    workspace: Path
    session_id: str
    rids: list[int]


async def _build(path: Path, workspace: Path) -> tuple[str, list[int]]:
    workspace.mkdir()
    (workspace / "greet.py").write_text('def greet(name):\n    return f"Hello {name}"\n')
    writer = await Writer.open(path)
    s = await Session.start(writer, workspace, title="e2e session")
    await s.message("user", GREETING)
    rids = []
    for tool, args in (("read", {"path": "greet.py"}), ("grep", {"pattern": "Hello"})):
        await s.run(tool, args)
        assert s.last is not None
        rids.append(s.last.rid)
    await s.message("assistant", "The greeting is built with an f-string.")
    await writer.close()
    return s.id, rids


@pytest.fixture
def small_store(tmp_path: Path) -> SmallStore:
    path = tmp_path / "store" / "store.db"
    path.parent.mkdir()
    session_id, rids = asyncio.run(_build(path, tmp_path / "ws"))
    return SmallStore(path, tmp_path / "ws", session_id, rids)


def insert_from_another_process(store: SmallStore, marker: str) -> float:
    """A result committed by the engine in a separate Python process; the wall-clock time of
    the commit, as that process saw it."""
    code = f"""
import asyncio
import time
from ctxview.engine.session import Session
from ctxview.store import Writer

async def main():
    writer = await Writer.open({str(store.path)!r})
    s = await Session.resume(writer, {store.session_id!r})
    await s.insert("bash", {{"command": "echo"}}, {marker!r})
    print(time.time(), flush=True)
    await writer.close()

asyncio.run(main())
"""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True
    )
    return float(done.stdout.split()[0])


class Tmux:
    """One tmux server of our own (its own socket), one session (120x40 unless told), more
    windows on demand; the screen read with capture-pane."""

    def __init__(self, tmp: Path, size: tuple[int, int] = (120, 40)) -> None:
        self.socket = f"ctxview-e2e-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp
        self.size = size

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, check=check, timeout=30)  # fmt: skip

    def start(self, command: list[str], env: dict[str, str] | None = None,
              term: str | None = "xterm-256color") -> None:  # fmt: skip
        """The session's first window runs `command` (in `env`, else ours), with TERM=`term`
        (None: tmux's own, tmux-256color)."""
        env = dict(env if env is not None else os.environ)
        env.pop("TMUX", None)
        # tmux's own client needs one (a run without a TERM); the pane gets `term`, or tmux's.
        env["TERM"] = term or "xterm-256color"
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "e2e",
             "-x", str(self.size[0]), "-y", str(self.size[1]), self._line(command, env, term)],
            check=True, env=env, timeout=30,
        )  # fmt: skip

    def window(self, name: str, command: list[str], env: dict[str, str] | None = None,
               term: str | None = "xterm-256color") -> str:  # fmt: skip
        """Another window of the session, at the same size, running `command`; its target."""
        env = dict(env if env is not None else os.environ)
        self.run("new-window", "-d", "-t", "e2e", "-n", name, self._line(command, env, term))
        return f"e2e:{name}"

    @staticmethod
    def _line(command: list[str], env: dict[str, str], term: str | None) -> str:
        # The environment on the command line: a tmux server started by another test keeps its
        # own. Quoted: a bare #1a2b would start a comment.
        keep = {k: v for k, v in env.items() if k in ("HOME", "CTXVIEW_STORE")
                or k.startswith("XDG_")}  # fmt: skip
        if term is not None:
            keep["TERM"] = term
        return shlex.join(["env", *(f"{k}={v}" for k, v in keep.items()), *command])

    def screen(self, target: str = "e2e", *, styles: bool = False) -> str:
        """The pane's text; with `styles`, its SGR codes too (capture-pane -e)."""
        done = self.run("capture-pane", "-p", *(["-e"] if styles else []), "-t", target,
                        check=False)  # fmt: skip
        return done.stdout

    def alive(self) -> bool:
        return self.run("has-session", "-t", "e2e", check=False).returncode == 0

    def keys(self, *keys: str, target: str = "e2e") -> None:
        self.run("send-keys", "-t", target, *keys)

    def wait(self, check: Callable[[str], bool], timeout: float, what: str,
             target: str = "e2e") -> str:  # fmt: skip
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen(target)
            if check(screen):
                return screen
            time.sleep(0.01)  # capture-pane itself takes a few ms
        raise AssertionError(f"{what} not on screen after {timeout} s; the screen:\n{screen}")

    def wait_gone(self, timeout: float, message: str) -> None:
        end = time.monotonic() + timeout
        while self.alive() and time.monotonic() < end:
            time.sleep(0.1)
        assert not self.alive(), message

    def close(self) -> None:
        self.run("kill-server", check=False)  # only our own server, on our own socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """A `ctxview serve` process of our own on a free loopback port: the URL it printed, and
    every line of its log (stderr, read on a thread so the pipe never fills)."""

    def __init__(self, *argv: str, env: dict[str, str] | None = None, timeout: float = 60) -> None:
        import re
        import subprocess
        import threading
        import time

        self.url = ""
        # The free port is found, closed, then bound by the server: another process may take it
        # in between (the server then refuses, saying "pick another --port"): try another.
        for _attempt in range(3):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [CTXVIEW, *argv, "--port", str(self.port)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            )  # fmt: skip
            self.lines: list[str] = []
            self.stdout = ""
            self._readers = [
                threading.Thread(target=self._read, daemon=True),
                threading.Thread(target=self._read_stdout, daemon=True),
            ]
            for reader in self._readers:
                reader.start()
            end = time.monotonic() + timeout
            while time.monotonic() < end and not self.url:
                for line in list(self.lines):
                    if found := re.search(r"open (http://\S+)", line):
                        self.url = found.group(1)
                if self.proc.poll() is not None and not self.url:
                    break
                time.sleep(0.05)
            if self.url or self.proc.poll() is None:
                break
            for reader in self._readers:
                reader.join(timeout=5)
            if "pick another --port" not in self.log():
                break
        if not self.url:
            self.close()
            raise AssertionError("ctxview serve printed no URL:\n" + "".join(self.lines))
        self.token = self.url.partition("?token=")[2]
        self.base = f"http://127.0.0.1:{self.port}"

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        self.stdout = self.proc.stdout.read()

    def log(self) -> str:
        return "".join(self.lines)

    def wait_log(self, words: str, timeout: float = 30) -> str:
        import time

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if words in self.log():
                return self.log()
            time.sleep(0.05)
        raise AssertionError(f"{words!r} never in serve's log:\n{self.log()}")

    def close(self) -> None:
        import subprocess

        if self.proc.poll() is None:
            self.proc.terminate()  # the server we started, by its own handle
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(timeout=5)

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc: children, their children, ...)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    out, frontier = [], [pid]
    while frontier:
        kids = [c for c, p in parents.items() if p in frontier]
        out += kids
        frontier = kids
    return out
