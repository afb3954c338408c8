"""A project folder for running a real agent CLI in a test: its own HOME (and, for the agents
that read them, XDG folders under it), its own ctxview store, `ctxview` run inside it, the agent
run headless, and the hook engine that store started stopped after. Each agent's helpers module
(claude_helpers, opencode_helpers, pi_helpers) adds only that agent's own settings and commands."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

import pytest

from ctxview.agents.hook_client import stop

HERE = Path(__file__).resolve().parent
CTXVIEW = Path(sys.executable).with_name("ctxview")

P = TypeVar("P", bound="AgentProject")


def needs(cli: Path, agent: str, folder: str, how: str = "") -> pytest.MarkDecorator:
    """Skip where the pinned agent is not installed (`how`: what installs it; by default its
    `npm ci` under tests/agents/<folder>)."""
    how = how or f"npm ci in tests/agents/{folder}"
    return pytest.mark.skipif(not cli.exists(), reason=f"{agent} is not installed ({how})")


def run_ctxview(cwd: Path, env: dict[str, str], *args: str,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`ctxview ARGS` in `cwd` with exactly `env`; its output, whatever its exit code."""
    return subprocess.run([str(CTXVIEW), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip


class Following:
    """`ctxview follow --no-view PATH` in its own process (in `cwd`, with exactly `env`), its
    stderr kept; `stop` ends it with ^C, as a person does, and checks it ended well."""

    def __init__(self, path: Path, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([str(CTXVIEW), "follow", "--no-view", str(path)], cwd=cwd,
                                     env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        self.lines.extend(self.proc.stderr)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)
        assert self.proc.returncode == 0, "".join(self.lines)


def wait_for(store: Path, check: Callable[[], object], what: str, timeout: float = 60) -> None:
    """Until `check()` is true of the store a follow writes (60 s at most, for a loaded
    machine); a store still being created counts as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if store.exists() and check():
                return
        except sqlite3.OperationalError:  # the store is being created
            pass
        assert time.monotonic() < deadline, f"follow never stored {what}"
        time.sleep(0.1)


def headless(argv: list[str], cwd: Path, env: dict[str, str], timeout: float,
             tail: int = 2000) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """One headless run of an agent that must succeed; on failure the ends of its output say why."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip
    assert done.returncode == 0, (done.stdout[-tail:], done.stderr[-tail:])
    return done


@dataclass
class AgentProject:
    root: Path  # the project folder the agent runs in
    home: Path  # its HOME (the agent's config and sessions)
    store: Path

    # Variables of the test's own environment the agent must not see (its own settings), beside
    # ctxview's; with `own_xdg`, the XDG folders are set under HOME instead of inherited.
    scrub: ClassVar[tuple[str, ...]] = ()
    own_xdg: ClassVar[bool] = False
    ctxview_timeout: ClassVar[float] = 60

    @classmethod
    @contextmanager
    def made(cls: type[P], tmp_path: Path) -> Iterator[P]:
        """The project folder and HOME made under `tmp_path`, the store beside them; the hook
        engine stopped after."""
        p = cls(tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db")
        p.root.mkdir()
        p.home.mkdir()
        try:
            yield p
        finally:
            stop(p.store)

    def agent_env(self, **values: str) -> dict[str, str]:
        """The test's environment without the scrubbed variables, with this HOME (and XDG
        folders), this store, and `values`."""
        drop = (*self.scrub, "CTXVIEW", *(("XDG_",) if self.own_xdg else ()))
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env["HOME"] = str(self.home)
        if self.own_xdg:
            h = self.home
            env.update(XDG_CONFIG_HOME=str(h / ".config"), XDG_DATA_HOME=str(h / ".local/share"),
                       XDG_STATE_HOME=str(h / ".local/state"), XDG_CACHE_HOME=str(h / ".cache"))  # fmt: skip
        env["CTXVIEW_STORE"] = str(self.store)
        env.update(values)
        return env

    def ctxview_env(self) -> dict[str, str]:
        """The environment `ctxview` runs with in this project: the agent's."""
        return self.agent_env()

    def ctxview(self, *args: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return run_ctxview(
            self.root, env or self.ctxview_env(), *args, timeout=self.ctxview_timeout
        )
