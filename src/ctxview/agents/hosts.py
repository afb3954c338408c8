"""The other agents whose hooks the resident engine serves over its Unix socket (`daemon.py`):
the event name their hook client sends -> the engine that answers them. One line per agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ctxview.agents.gemini.engine import GeminiEngine


class HostEngine(Protocol):
    async def respond(self, payload: dict[str, Any]) -> dict[str, Any] | None: ...

    async def close(self) -> None: ...


HOSTS: dict[str, Callable[[Path], HostEngine]] = {
    "gemini": GeminiEngine,
}
