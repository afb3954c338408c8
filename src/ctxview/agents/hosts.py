"""The agents besides Claude Code whose hooks, plugin or extension the resident engine answers
(`daemon.py`): an event's first word (`gemini`, `opencode.tool`, `pi.tool_result`) -> the host
that answers it over the engine's store, made on the first such event and closed with the
engine. One line per agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ctxview.agents.gemini.engine import GeminiEngine
from ctxview.agents.opencode.answers import OpenCodeHost
from ctxview.agents.pi.engine import PiEngine

if TYPE_CHECKING:
    from ctxview.agents.claude_code.hooks import HookEngine
    from ctxview.agents.hook_trace import Trace


class Host(Protocol):
    async def respond(self, event: str, payload: dict[str, Any], trace: Trace
                      ) -> dict[str, Any] | None: ...  # fmt: skip

    async def close(self) -> None: ...


HOSTS: dict[str, Callable[[HookEngine], Host]] = {
    "gemini": GeminiEngine,  # Gemini CLI's command hooks (agents/gemini)
    "opencode": OpenCodeHost,  # ctxview's OpenCode plugin (agents/opencode)
    "pi": PiEngine,  # ctxview's pi extension (agents/pi)
}


def host_of(event: str) -> str | None:
    """The agent an event is for, or None for Claude Code's own."""
    name = event.partition(".")[0]
    return name if name in HOSTS else None
