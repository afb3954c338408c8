"""Helpers for the engine's tests: a real workspace and a real store, nothing mocked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from ctxview.backend.store.writer import Writer


@asynccontextmanager
async def workspace_and_writer(
    tmp: Path, files: dict[str, str], store: str = "s.db"
) -> AsyncIterator[tuple[Path, Writer]]:
    """A workspace `tmp/ws` holding `files` (name -> UTF-8 text) and a writer on a new store
    `tmp/<store>`, closed on leaving."""
    ws = tmp / "ws"
    ws.mkdir()
    for name, text in files.items():
        (ws / name).write_text(text, encoding="utf-8")
    async with await Writer.open(tmp / store) as writer:
        yield ws, writer
