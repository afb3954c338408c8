"""Running the pinned pi (tests/agents/pi, `npm ci` there) against the scripted Messages API
(fake_anthropic.py, as pi's `anthropic-messages` provider with its base URL), headless: `-p`
for one prompt, `--mode rpc` for a session of several prompts and a compaction."""

from __future__ import annotations

import json
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar

if __package__:  # imported as tests.agents.pi_helpers (the project's root on sys.path)
    from .agent_project import CTXVIEW as CTXVIEW
    from .agent_project import HERE, AgentProject, headless, needs
    from .messages_request import texts as texts
    from .messages_request import tool_results
else:  # as pi_helpers (tests/agents on sys.path: pytest's own import, the benches)
    from agent_project import CTXVIEW as CTXVIEW
    from agent_project import HERE, AgentProject, headless, needs
    from messages_request import texts as texts
    from messages_request import tool_results

results = tool_results  # pi's tests' name for it

PI = HERE / "pi" / "node_modules" / ".bin" / "pi"
MODEL = ["--provider", "fake", "--model", "fake-model"]
TOOLS = ["--tools", "read,bash,edit,write,grep,find,ls,recall"]

needs_pi = needs(PI, "pi", "pi")


class PiProject(AgentProject):
    """HOME holds ~/.pi/agent: models, sessions."""

    scrub: ClassVar[tuple[str, ...]] = ("PI_", "ANTHROPIC")
    own_xdg: ClassVar[bool] = True

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
        return self.agent_env(PI_OFFLINE="1", **extra)

    def ctxview_env(self) -> dict[str, str]:
        return self.env()

    def print(self, prompt: str, **extra: str) -> str:
        """One headless `pi -p` run; what it printed."""
        return headless([str(PI), "-p", *MODEL, *TOOLS, prompt], self.root,
                        self.env(**extra), timeout=120).stdout  # fmt: skip

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


def pi_project(tmp_path: Path) -> AbstractContextManager[PiProject]:
    """A project and HOME of its own; the hook engine stopped after."""
    return PiProject.made(tmp_path)
