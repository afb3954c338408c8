"""Running the real Gemini CLI 0.61 (tests/agents/gemini/node_modules) headless against the
scripted Gemini API (fake_gemini.py), every run with its own HOME, XDG folders and store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ctxview.agents.hook_client import stop

if __package__:  # imported as tests.agents.gemini_helpers (the project's root on sys.path)
    from . import agent_project
    from .fake_gemini import Call, Say, Scripted
else:  # as gemini_helpers (tests/agents on sys.path: pytest's own import)
    import agent_project
    from fake_gemini import Call, Say, Scripted

CLI = Path(__file__).parent / "gemini" / "node_modules" / "@google" / "gemini-cli" / "bundle" / (
    "gemini.js")  # fmt: skip
CTXVIEW = str(agent_project.CTXVIEW)


def home_settings(home: Path) -> None:
    """What a headless run needs in the user's settings: the API key auth, a trusted folder, no
    telemetry or update checks."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"},
                     "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "telemetry": {"enabled": False},
    }))  # fmt: skip


def env(tmp: Path, base_url: str, **extra: str) -> dict[str, str]:
    home = tmp / "home"
    home_settings(home)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb",
            "XDG_STATE_HOME": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "config"),
            "XDG_DATA_HOME": str(tmp / "data"), "CTXVIEW_STORE": str(tmp / "store.db"),
            "GEMINI_API_KEY": "scripted", "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_NO_RELAUNCH": "1", **extra}  # fmt: skip


def run_gemini(cwd: Path, environ: dict[str, str], prompt: str, *args: str,
               timeout: float = 180) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(["node", str(CLI), *args, "-p", prompt, "--yolo", "-m",
                           "gemini-2.5-flash"],
                          cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def clock_ahead(seconds: int) -> dict[str, str]:
    """The environment that sets Gemini CLI's `new Date()` this far ahead (gemini_clock.mjs): a
    run in a later minute, without waiting for one."""
    return {"NODE_OPTIONS": f"--import {_CLOCK}", "CTXVIEW_TEST_CLOCK_AHEAD": str(seconds)}


def clock_at(when: float) -> dict[str, str]:
    """The environment that starts Gemini CLI's `new Date()` at `when` (seconds since the epoch,
    gemini_clock.mjs): runs in a minute of the test's choosing, whatever the real clock does."""
    return {"NODE_OPTIONS": f"--import {_CLOCK}", "CTXVIEW_TEST_CLOCK_AT": f"{when:.3f}"}


_CLOCK = Path(__file__).parent / "gemini_clock.mjs"


def ctxview(cwd: Path, environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return agent_project.run_ctxview(cwd, environ, *args)


def scripted_run(cwd: Path, environ: dict[str, str], steps: list[Call | Say], prompt: str,
                 *args: str) -> tuple[Scripted, subprocess.CompletedProcess[str]]:  # fmt: skip
    """One run against a scripted server of its own (`environ` pointed at it, and left so): the
    server, holding what it was sent, and the run, whatever its exit code."""
    with Scripted(steps) as s:
        environ["GOOGLE_GEMINI_BASE_URL"] = s.base_url
        return s, run_gemini(cwd, environ, prompt, *args)


@contextmanager
def installed(cwd: Path, environ: dict[str, str]) -> Iterator[Path]:
    """`ctxview install gemini` in the project: its store, whose hook engine is stopped after."""
    store = Path(environ["CTXVIEW_STORE"])
    done = ctxview(cwd, environ, "install", "gemini")
    assert done.returncode == 0, done.stderr
    try:
        yield store
    finally:
        stop(store)


def chat_files(home: Path) -> list[Path]:
    """Gemini's own chat files under HOME (`~/.gemini/tmp/<project>/chats/`)."""
    return sorted((home / ".gemini" / "tmp").glob("*/chats/session-*.json*"))


def follow_once(cwd: Path, environ: dict[str, str], path: Path) -> str:
    """`ctxview follow --no-view PATH` until it has imported a batch of the file, then ^C: its
    stderr."""
    proc = subprocess.Popen([CTXVIEW, "follow", "--no-view", str(path)], cwd=cwd, env=environ,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:  # one line per batch: the first one is the whole file so far
        lines.append(line)
        if "→ gm-" in line:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 0, "".join(lines)
    return "".join(lines)
