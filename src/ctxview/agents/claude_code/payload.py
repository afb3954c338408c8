"""A Claude Code hook's input: read as Claude Code sent it, and what it names (its store
session, the top of its session tree, an agent it hands back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxview.importers.common import TooDeep, parse_line


class HookError(Exception):
    """A hook input this engine does not know how to handle (recorded, never shown)."""


class BadInput(HookError):
    """A hook input that is not a JSON object this engine may read (the sentence says why)."""

    says_it_all = True  # failures.describe


def hook_input(raw: bytes) -> dict[str, Any]:
    """The hook input as Claude Code sent it (either transport): a JSON object nested at most
    `importers.common.MAX_DEPTH` levels deep; BadInput otherwise (no depth raises)."""
    try:
        payload = parse_line(raw)
    except TooDeep as exc:
        raise BadInput(f"the hook input is {exc}") from None
    except ValueError as exc:
        raise BadInput(f"the hook input is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise BadInput("the hook input is not a JSON object")
    return payload


def session_id_of(payload: dict[str, Any]) -> str:
    sid = payload.get("session_id")
    if not isinstance(sid, str) or not sid:
        raise HookError("the hook input has no session_id")
    agent = payload.get("agent_id")
    return f"cc-{agent}" if isinstance(agent, str) and agent else f"cc-{sid}"


def tree_root(payload: dict[str, Any]) -> str:
    """The store session at the top of the hook's session tree: a sub-agent's hook input names
    its root session as `session_id` (and itself as `agent_id`)."""
    session_id_of(payload)
    return f"cc-{payload['session_id']}"


def as_root(payload: dict[str, Any]) -> dict[str, Any]:
    """A sub-agent's hook input as its root session's (the same `session_id` and transcript)."""
    return {k: v for k, v in payload.items() if k not in ("agent_id", "agent_type")}


def handed_back(payload: dict[str, Any]) -> str | None:
    """The agent id a finished Agent (or Task) call names: its sub-agent ran in the foreground
    and its result is this call's (a background one's call answers `async_launched` at once)."""
    if payload.get("tool_name") not in ("Agent", "Task"):
        return None
    resp = payload.get("tool_response")
    if not isinstance(resp, dict) or resp.get("status") != "completed":
        return None
    agent = resp.get("agentId")
    return agent if isinstance(agent, str) and agent else None


def resolved(path: Any) -> str | None:
    return str(Path(path).expanduser().resolve()) if isinstance(path, str) and path else None
