"""Gemini CLI 0.61's chat files of a session whose one turn ran two sub-agents at once, shaped
as Gemini writes them: the parent's `chats/session-….jsonl`, whose `invoke_agent` records carry
the sub-agent's id (`agentId`, from the invocation's result data), and each sub-agent's own
`chats/<the parent's session id>/<agent id>.jsonl` (header `kind: "subagent"`, its calls' ids
`<agent id>#<turn>-<index>` when the model gave none)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PARENT = "5e551011-aaaa-4bbb-8ccc-0000000000a1"
AGENTS = ("a9e7c0de-1111-4aaa-8bbb-000000000001", "a9e7c0de-2222-4aaa-8bbb-000000000002")
CALLS = ("invoke_agent__invoke_agent_1796223674810_0", "invoke_agent__invoke_agent_1796223674810_1")
HASH = "cd" * 32


def _lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _call(cid: str, name: str, args: dict[str, Any], output: str, **more: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "args": args, "status": "success",
            "result": [{"functionResponse": {"id": cid, "name": name,
                                             "response": {"output": output}}}],
            "timestamp": "2026-05-01T10:00:09.000Z", **more}  # fmt: skip


def write(root: Path) -> tuple[Path, list[Path]]:
    """The three files under `root` (a `~/.gemini/tmp`): the parent's and the two agents'."""
    chats = root / HASH / "chats"
    head = {"sessionId": PARENT, "projectHash": HASH, "startTime": "2026-05-01T10:00:00.000Z",
            "lastUpdated": "2026-05-01T10:00:00.000Z", "kind": "main"}  # fmt: skip
    calls = []
    for n, (agent, cid) in enumerate(zip(AGENTS, CALLS, strict=True)):
        report = f"report {n}"
        display = {"isSubagentProgress": True, "agentName": "codebase_investigator",
                   "state": "completed", "result": report, "terminateReason": "GOAL",
                   "recentActivity": [{"id": f"{agent}#0-0", "type": "tool_call",
                                       "content": "read_file", "status": "completed"}]}  # fmt: skip
        calls.append(_call(cid, "invoke_agent",
                           {"agent_name": "codebase_investigator", "prompt": f"look {n}"},
                           f"Subagent 'codebase_investigator' finished.\nTermination Reason: "
                           f"GOAL\nResult:\n{report}", agentId=agent, resultDisplay=display,
                           description="Delegating to agent 'codebase_investigator'"))  # fmt: skip
    parent = _lines(chats / f"session-2026-05-01T10-00-{PARENT[:8]}.jsonl", [
        head,
        {"id": "u-1", "timestamp": "2026-05-01T10:00:01.000Z", "type": "user",
         "content": [{"text": "investigate twice"}]},
        {"id": "g-2", "timestamp": "2026-05-01T10:00:02.000Z", "type": "gemini", "content": "",
         "model": "gemini-2.5-flash", "toolCalls": calls},
        {"id": "g-3", "timestamp": "2026-05-01T10:00:10.000Z", "type": "gemini",
         "content": "fin.", "model": "gemini-2.5-flash"},
    ])  # fmt: skip
    agents = []
    for n, agent in enumerate(AGENTS):
        agents.append(_lines(chats / PARENT / f"{agent}.jsonl", [
            {**head, "sessionId": agent, "kind": "subagent", "directories": ["/work/demo"]},
            {"id": f"su-{n}", "timestamp": "2026-05-01T10:00:03.000Z", "type": "user",
             "content": [{"text": f"look {n}"}]},
            {"id": f"sg-{n}", "timestamp": "2026-05-01T10:00:04.000Z", "type": "gemini",
             "content": "", "model": "gemini-2.5-flash", "toolCalls": [
                 _call(f"{agent}#0-0", "read_file", {"file_path": "/work/demo/notes.txt"},
                       "alpha\n"),
                 _call(f"{agent}#1-0", "complete_task", {"report": f"report {n}"},
                       "Output submitted and task completed.")]},
        ]))  # fmt: skip
    return parent, agents
