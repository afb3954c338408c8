"""Running the pinned Claude Code (tests/agents/claude, `npm ci` there) against the scripted
Messages API, with ctxview installed in a project through `ctxview install claude-code`."""

from __future__ import annotations

import json
import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar

if __package__:  # imported as tests.agents.claude_helpers (the project's root on sys.path)
    from .agent_project import CTXVIEW as CTXVIEW
    from .agent_project import HERE, AgentProject, headless, needs
    from .messages_request import result_text
    from .messages_request import tool_results as tool_results
else:  # as claude_helpers (tests/agents on sys.path: pytest's own import, the benches)
    from agent_project import CTXVIEW as CTXVIEW
    from agent_project import HERE, AgentProject, headless, needs
    from messages_request import result_text
    from messages_request import tool_results as tool_results

CLAUDE = HERE / "claude" / "node_modules" / ".bin" / "claude"

needs_claude = needs(CLAUDE, "Claude Code", "claude")


class Project(AgentProject):
    scrub: ClassVar[tuple[str, ...]] = ("CLAUDE", "ANTHROPIC")

    def env(self, api_url: str, **extra: str) -> dict[str, str]:
        return self.agent_env(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=api_url,
                              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                              DISABLE_AUTOUPDATER="1", **extra)  # fmt: skip

    def ctxview_env(self) -> dict[str, str]:
        # ctxview as the person runs it beside Claude Code: their environment, this HOME and store
        return {**os.environ, "HOME": str(self.home), "CTXVIEW_STORE": str(self.store)}

    def claude(self, api_url: str, *args: str, **extra: str) -> dict[str, Any]:
        """One headless run; its JSON result."""
        done = headless(
            [str(CLAUDE), "-p", *args, "--output-format", "json",
             "--allowedTools", "Read,Bash,Edit,Write,Agent,mcp__ctxview__recall"],
            self.root, self.env(api_url, **extra), timeout=120,
        )  # fmt: skip
        return json.loads(done.stdout)


def project(tmp_path: Path) -> AbstractContextManager[Project]:
    """A project with ctxview installed by its own command, and the hook engine stopped after."""
    return Project.made(tmp_path)


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
                out.append((m["role"], f"tool_result:{b['tool_use_id']}", result_text(b)))
    return out


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
