"""What the link-free file access keeps of the old behaviour: links inside the workspace still
lead where they point, a replaced file keeps its mode, a failed write leaves nothing behind; and
what it refuses: a key whose component is a link (a swap), a FIFO, a folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from engine_helpers import workspace_and_writer

from ctxview.engine.session import Session
from ctxview.files import safe_fs
from ctxview.tools.workspace import Workspace


async def test_links_inside_the_workspace_are_still_followed(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {"real.txt": "one\n"}) as (ws, writer):
        (ws / "sub").mkdir()
        os.symlink("../real.txt", ws / "sub" / "link.txt")
        os.symlink("sub", ws / "dirlink")
        session = await Session.start(writer, ws)
        assert (await session.run("read", {"path": "dirlink/link.txt"})).endswith("\n1: one")
        await session.run("edit", {"path": "sub/link.txt", "old_string": "one", "new_string": "2"})
        assert (ws / "real.txt").read_text() == "2\n"  # the target changed, the link stayed
        assert (ws / "sub" / "link.txt").is_symlink()
        grep = await session.run("grep", {"pattern": "2"})
        assert grep == "[#1002]\nreal.txt:1: 2\nsub/link.txt:1: 2"
        listing = await session.run("list", {})
        assert listing == "[#1003]\ndirlink/\nreal.txt\nsub/\nsub/link.txt"
        await session.end()


def test_a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path: Path) -> None:
    (tmp_path / "x.sh").write_text("old")
    os.chmod(tmp_path / "x.sh", 0o750)
    ws = Workspace(tmp_path)
    ws.write_text("x.sh", "new")
    assert stat.S_IMODE((tmp_path / "x.sh").stat().st_mode) == 0o750
    old = os.umask(0o027)
    try:
        ws.write_text("deep/new.txt", "n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "deep" / "new.txt").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "new.txt", "x.sh"]


def test_a_link_in_a_key_is_a_swap_and_nothing_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "v.txt").write_text("victim")
    os.symlink("../out/v.txt", root / "v.txt")
    os.symlink("../out", root / "o")
    for key in ("v.txt", "o/v.txt"):
        with pytest.raises(OSError):
            safe_fs.read(str(root), key)
        with pytest.raises(OSError):
            safe_fs.write(str(root), key, b"x")
    safe_fs.unlink(str(root), "v.txt")  # the link itself goes, not what it points to
    assert not (root / "v.txt").exists() and (tmp_path / "out" / "v.txt").read_text() == "victim"
    assert [p.name for p in (root / "d").iterdir()] == []  # no temporary file left


def test_a_fifo_and_a_folder_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    with pytest.raises(safe_fs.NotRegularError):
        safe_fs.read(str(tmp_path), "pipe")
    with pytest.raises(IsADirectoryError):
        safe_fs.read(str(tmp_path), "dir")
    with pytest.raises(IsADirectoryError):
        safe_fs.write(str(tmp_path), "dir", b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "pipe"]
