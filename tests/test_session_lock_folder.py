"""The session lock on a store whose folder does not exist yet (Codex's first MCP call can come
before anything wrote the store, `ctxview run --elide -- codex` met it): the lock is taken, the
folders are made 0700 as the store's own would be, and the call goes on."""

from __future__ import annotations

import stat
from pathlib import Path

from ctxview.store.session_lock import lock_path, session_lock


async def test_a_lock_beside_a_store_not_made_yet_makes_its_folders(tmp_path: Path) -> None:
    store = tmp_path / "state" / "deeper" / "store.db"
    async with session_lock(store, "cx-1"):
        assert lock_path(store, "cx-1").exists()
    for folder in (tmp_path / "state", tmp_path / "state" / "deeper", Path(f"{store}.locks")):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not store.exists()  # the lock makes no store
