"""Running the pinned pi (tests/agents/pi, `npm ci` there) against the scripted Messages API
(fake_anthropic.py, as pi's `anthropic-messages` provider with its base URL), headless: `-p`
for one prompt, `--mode rpc` for a session of several prompts and a compaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctxview.agents.hook_client import stop

HERE = Path(__file__).resolve().parent
PI = HERE / "pi" / "node_modules" / ".bin" / "pi"
CTXVIEW = Path(sys.executable).with_name("ctxview")
MODEL = ["--provider", "fake", "--model", "fake-model"]
TOOLS = ["--tools", "read,bash,edit,write,grep,find,ls,recall"]

needs_pi = pytest.mark.skipif(not PI.exists(),
                              reason="pi is not installed (npm ci in tests/agents/pi)")  # fmt: skip


@dataclass
class PiProject:
    root: Path  # the project folder pi runs in
    home: Path  # its HOME (~/.pi/agent: models, sessions)
    store: Path

    @property
    def agent_dir(self) -> Path:
        return self.home / ".pi" / "agent"

    def provider(self, api_url: str) -> None:
        """The scripted server as pi's provider `fake` (its models.json)."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        (self.agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": api_url, "api": "anthropic-messages", "apiKey": "test-key",
            "models": [{"id": "fake-model", "contextWindow": 200000, "maxTokens": 8000}]}}}))  # fmt: skip

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PI_", "ANTHROPIC", "CTXVIEW", "XDG_"))}  # fmt: skip
        env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / ".config"),
                   XDG_DATA_HOME=str(self.home / ".local/share"),
                   XDG_STATE_HOME=str(self.home / ".local/state"),
                   CTXVIEW_STORE=str(self.store), PI_OFFLINE="1", **extra)  # fmt: skip
        return env

    def ctxview(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CTXVIEW), *args], cwd=self.root, env=self.env(),
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    def print(self, prompt: str, **extra: str) -> str:
        """One headless `pi -p` run; what it printed."""
        done = subprocess.run([str(PI), "-p", *MODEL, *TOOLS, prompt], cwd=self.root,
                              env=self.env(**extra), capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout

    def sessions(self) -> list[Path]:
        return sorted((self.agent_dir / "sessions").rglob("*.jsonl"))


class Rpc:
    """`pi --mode rpc`: commands on stdin, events on stdout (one JSON a line)."""

    def __init__(self, project: PiProject, **extra: str) -> None:
        self.proc = subprocess.Popen([str(PI), "--mode", "rpc", *MODEL, *TOOLS],
                                     cwd=project.root, env=project.env(**extra),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.events: list[dict[str, Any]] = []

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def until(self, kind: str, command: str | None = None) -> dict[str, Any]:
        """Read events until one of `kind` (a `response` to `command`)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.events.append(event)
            if event.get("type") == kind and (command is None or event.get("command") == command):
                return event
        raise AssertionError(f"pi ended before {kind}: {self.proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]

    def prompt(self, text: str) -> dict[str, Any]:
        self.send({"type": "prompt", "message": text})
        return self.until("agent_end")

    def compact(self) -> dict[str, Any]:
        self.send({"id": "c", "type": "compact"})
        return self.until("response", "compact")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def pi_project(tmp_path: Path) -> Iterator[PiProject]:
    """A project and HOME of its own; the hook engine stopped after."""
    p = PiProject(tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db")
    p.root.mkdir()
    p.home.mkdir()
    try:
        yield p
    finally:
        stop(p.store)


def results(body: dict[str, Any]) -> dict[str, str]:
    """tool_use_id -> the exact text the model got for it, in one Messages API request."""
    out: dict[str, str] = {}
    for m in body.get("messages", []):
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                out[b["tool_use_id"]] = c if isinstance(c, str) else "\n".join(
                    x.get("text", "") for x in c or [] if isinstance(x, dict))  # fmt: skip
    return out


def texts(body: dict[str, Any]) -> list[str]:
    """Every text block of a request's messages, in order."""
    out: list[str] = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return out
