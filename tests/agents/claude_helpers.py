"""Running the pinned Claude Code (tests/agents/claude, `npm ci` there) against the scripted
Messages API, with ctxview installed in a project through `ctxview install claude-code`."""

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
CLAUDE = HERE / "claude" / "node_modules" / ".bin" / "claude"
CTXVIEW = Path(sys.executable).with_name("ctxview")

needs_claude = pytest.mark.skipif(
    not CLAUDE.exists(), reason="Claude Code is not installed (npm ci in tests/agents/claude)"
)


@dataclass
class Project:
    root: Path  # the project folder Claude Code runs in
    home: Path  # its HOME (Claude Code's config and transcripts)
    store: Path

    def env(self, api_url: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CLAUDE", "ANTHROPIC", "CTXVIEW"))}  # fmt: skip
        env.update(HOME=str(self.home), ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=api_url,
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                   CTXVIEW_STORE=str(self.store), **extra)  # fmt: skip
        return env

    def ctxview(self, *args: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        run_env = env or {**os.environ, "HOME": str(self.home), "CTXVIEW_STORE": str(self.store)}
        return subprocess.run([str(CTXVIEW), *args], cwd=self.root, env=run_env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    def claude(self, api_url: str, *args: str, **extra: str) -> dict[str, Any]:
        """One headless run; its JSON result."""
        done = subprocess.run(
            [str(CLAUDE), "-p", *args, "--output-format", "json",
             "--allowedTools", "Read,Bash,Edit,Write,Agent,mcp__ctxview__recall"],
            cwd=self.root, env=self.env(api_url, **extra), capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        return json.loads(done.stdout)


@contextmanager
def project(tmp_path: Path) -> Iterator[Project]:
    """A project with ctxview installed by its own command, and the hook engine stopped after."""
    p = Project(tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db")
    p.root.mkdir()
    p.home.mkdir()
    try:
        yield p
    finally:
        stop(p.store)


def conversation(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A request's messages as (role, kind, text): kind is `text`, `tool_use:<id>`,
    `tool_result:<id>`; `system` messages are Claude Code's in-conversation reminders."""
    out: list[tuple[str, str, str]] = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append((m["role"], "text", content))
            continue
        for b in content:
            kind = b.get("type")
            if kind == "text":
                out.append((m["role"], "text", b["text"]))
            elif kind == "tool_use":
                out.append((m["role"], f"tool_use:{b['id']}", json.dumps(b["input"])))
            elif kind == "tool_result":
                c = b.get("content")
                text = c if isinstance(c, str) else "\n".join(
                    x.get("text", "") for x in c or [] if isinstance(x, dict))  # fmt: skip
                out.append((m["role"], f"tool_result:{b['tool_use_id']}", text))
    return out


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_use_id -> the exact text the model got for it."""
    return {k.split(":", 1)[1]: t for _, k, t in conversation(body) if k.startswith("tool_result:")}


def after_result(body: dict[str, Any], tool_use_id: str) -> list[str]:
    """The texts right after a tool result, up to the next assistant turn (hook context)."""
    conv = conversation(body)
    at = next(i for i, (_, k, _) in enumerate(conv) if k == f"tool_result:{tool_use_id}")
    out = []
    for role, _, text in conv[at + 1 :]:
        if role == "assistant":
            break
        out.append(text)
    return out


def bash_turn(sid: str, cwd: Path, prompt: str, shown: str) -> list[dict[str, Any]]:
    """A Claude Code transcript's first turn, as its records: the prompt, the assistant's `ls`
    through Bash (toolu_1) and its result, whose text is `shown`."""
    ts = "2026-12-01T07:00:0{}Z"
    common = {"sessionId": sid, "cwd": str(cwd), "isSidechain": False}
    return [
        {**common, "type": "user", "uuid": "u1", "timestamp": ts.format(1),
         "message": {"role": "user", "content": prompt}},
        {**common, "type": "assistant", "uuid": "u2", "timestamp": ts.format(2),
         "message": {"id": "msg_1", "role": "assistant", "model": "m", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
             "usage": {"input_tokens": 10, "output_tokens": 3}}},
        {**common, "type": "user", "uuid": "u3", "timestamp": ts.format(3),
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_1", "content": shown}]},
         "toolUseResult": {"stdout": shown, "stderr": ""}},
    ]  # fmt: skip


def notified(body: dict[str, Any]) -> bool:
    """Whether a request carries a background task's `<task-notification>`."""
    return any("<task-id>" in t for _, _, t in conversation(body))


def once_notified(steps: list[Any], wait: int = 2) -> list[Any]:
    """Script steps for after a background call: each ends the turn ("Waiting.") until the
    request carries the task's notification (Claude Code may deliver it inside the same turn,
    or as a prompt after it), then `steps` in order, one per request. A step may be a function
    of the request (fake_anthropic.Step)."""
    todo = list(steps)

    def step(body: dict[str, Any]) -> dict[str, Any]:
        if not notified(body) and len(todo) == len(steps):
            return {"text": "Waiting."}
        nxt = todo.pop(0) if todo else {"text": "Done."}
        return nxt(body) if callable(nxt) else nxt

    return [step] * (len(steps) + wait)
