"""ctrl+p → "Export session" in the viewer: the export runs as `ctxview export` in a worker,
and a notification says where the file went."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import OptionList

from ctxview.demo.run import run_demo
from ctxview.viewer.app import CtxviewApp


async def test_palette_exports_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store.db"
    run = await run_demo(store, pace=0, workspace_root=tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    monkeypatch.setenv("CTXVIEW_EXPORT_DIR", str(out_dir))
    app = CtxviewApp(store, session=run.session_id, watch=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("ctrl+p")
        for _ in range(150):  # a fixed pause was too short on a loaded machine: wait for it
            await pilot.pause(0.2)
            if isinstance(app.screen, CommandPalette):
                break
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"export")
        shown: list[str] = []
        for _ in range(150):  # the palette searches in the background
            await pilot.pause(0.2)
            options = app.screen.query_one(OptionList)
            shown = [str(options.get_option_at_index(i).prompt)
                     for i in range(options.option_count)]  # fmt: skip
            if shown and "Export session" in shown[0]:
                break
        assert shown and "Export session" in shown[0], shown
        await pilot.press("enter")
        for _ in range(600):  # the export is another process: up to ~2 min on a busy machine
            await pilot.pause(0.2)
            said = [n.message for n in app._notifications]
            if any(m.startswith("Exported to") for m in said):
                break
        said = [n.message for n in app._notifications]
        done = [m for m in said if m.startswith("Exported to")]
        assert done, said
        files = list(out_dir.glob("*.html"))
        assert len(files) == 1 and str(files[0]) in done[0]
        assert "Fix: cart total wrong" in files[0].read_text()
    await asyncio.sleep(0)
