"""A store's resident engine held down for a while, as when it is gone at an agent's call: the
running one stopped and its lock held here, so the one a plugin or extension starts leaves at
once (daemon.main: one engine per store); and the scripted steps around such a spell."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctxview.agents.hook_client import ask, socket_path, stop


@contextmanager
def engine_held_down(store: Path) -> Iterator[None]:
    """No engine for `store` while inside."""
    assert stop(store)
    fd = os.open(str(socket_path(store)) + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def down_then_back(store: Path, down: list[dict[str, Any]],
                   back: dict[str, Any] | Callable[[], dict[str, Any]]) -> list[Any]:  # fmt: skip
    """Scripted steps: `down` with the engine held down (the agent's own outputs go to the
    model, its plugin or extension records each), then `back` (or what it gives, called then)
    with the engine started again."""
    held = engine_held_down(store)

    def first_down(body: dict[str, Any]) -> dict[str, Any]:
        held.__enter__()
        return down[0]

    def engine_back(body: dict[str, Any]) -> dict[str, Any]:
        held.__exit__(None, None, None)
        ask(str(store), "_ping", b"", deadline=time.monotonic() + 10)  # started again
        return back() if callable(back) else back

    return [first_down, *down[1:], engine_back]
