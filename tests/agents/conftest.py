"""Fixtures the agent tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ctxview.agents.claude_code.hooks import HookEngine


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[HookEngine]:
    """Claude Code's hook engine, opened on a store of its own (`tmp_path/store.db`) beside the
    project folder `tmp_path/proj`; closed after."""
    eng = HookEngine(tmp_path / "store.db")
    await eng.open()
    (tmp_path / "proj").mkdir()
    yield eng
    await eng.close()
