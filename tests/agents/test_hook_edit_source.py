"""An edit's diff (and a read's hash and length) come from what Claude Code reports, never from
a file the hook input names: hostile inputs naming a file outside the session's working folder
(absolute, `../`, a link) get a diff of the report's own strings, and nothing of that file
reaches the answer or the store. A file is read only inside the working folder, or when Claude
Code says it just wrote it and its report fits it. In process and through the hook command."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxview.agents.claude_code.edits import apply_patch, before_patch
from ctxview.agents.claude_code.hooks import HookEngine
from ctxview.agents.hook_client import stop

SECRET = "TOPSECRET-7f3a\nsecond secret line\n"


@pytest.fixture
async def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    proj = tmp_path / "proj"
    proj.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (proj / "link.txt").symlink_to(outside / "secret.txt")
    monkeypatch.chdir(proj)  # a relative path resolves where Claude Code would resolve it
    engine = HookEngine(tmp_path / "store.db")
    await engine.open()
    yield engine, proj, outside
    await engine.close()


def _input(proj: Path, tool: str, args: dict[str, Any], resp: Any, ref: str) -> dict[str, Any]:
    return {"session_id": "s1", "cwd": str(proj), "transcript_path": str(proj / "none.jsonl"),
            "hook_event_name": "PostToolUse", "tool_name": tool, "tool_use_id": ref,
            "tool_input": args, "tool_response": resp}  # fmt: skip


def _everything(engine: HookEngine) -> str:
    conn = sqlite3.connect(engine.store)
    try:
        rows = conn.execute("SELECT shown || char(10) || CAST(stored AS TEXT) FROM bodies")
        events = conn.execute("SELECT coalesce(args, '') || coalesce(text, '') || "
                              "coalesce(sha, '') FROM events")  # fmt: skip
        return "\n".join(r[0] for r in [*rows, *events])
    finally:
        conn.close()


def _context(out: dict[str, Any] | None) -> str:
    assert out is not None
    return str(out["hookSpecificOutput"]["additionalContext"])


HOSTILE = ["{outside}/secret.txt", "../outside/secret.txt", "link.txt", "/etc/passwd",
           "../../../../../../../../../../etc/passwd"]  # fmt: skip


@pytest.mark.parametrize("named", HOSTILE)
async def test_an_edit_naming_another_file_shows_only_the_reports_strings(setup, named) -> None:  # type: ignore[no-untyped-def]
    engine, proj, outside = setup
    path = named.format(outside=outside)
    edit = _input(proj, "Edit", {"file_path": path, "old_string": "fake", "new_string": "made up"},
                  {"filePath": path, "oldString": "fake", "newString": "made up",
                   "originalFile": "a fake file\n", "structuredPatch": [],
                   "userModified": False, "replaceAll": False}, "e1")  # fmt: skip
    ctx = _context(await engine.handle("PostToolUse", edit))
    assert "-a fake file\n+a made up file" in ctx
    write = _input(proj, "Write", {"file_path": path, "content": "new text\n"},
                   {"type": "update", "filePath": path, "content": "new text\n",
                    "originalFile": "old text\n", "structuredPatch": []}, "w1")  # fmt: skip
    assert "-old text\n+new text" in _context(await engine.handle("PostToolUse", write))
    multi = _input(proj, "MultiEdit", {"file_path": path, "edits": [
        {"old_string": "one", "new_string": "two"}]},
        {"filePath": path, "originalFile": "one\n", "structuredPatch": []}, "m1")  # fmt: skip
    assert "-one\n+two" in _context(await engine.handle("PostToolUse", multi))
    # The report does not tell (no original): no diff, and the file stays unread.
    blind = _input(proj, "Edit", {"file_path": path, "old_string": "x", "new_string": "y"},
                   {"filePath": path, "oldString": "x", "newString": "y", "originalFile": None,
                    "structuredPatch": []}, "e2")  # fmt: skip
    assert _context(await engine.handle("PostToolUse", blind)) == (
        "[#1003] is the id of this Edit result.")  # fmt: skip
    everything = _everything(engine)
    for secret in ("TOPSECRET", "second secret line", "root:x:0:0",
                   hashlib.sha256(SECRET.encode()).hexdigest()[:8]):  # fmt: skip
        assert secret not in everything, secret


@pytest.mark.parametrize("named", HOSTILE)
async def test_a_read_or_notebook_edit_naming_another_file_learns_nothing_of_it(
    setup, named
) -> None:  # type: ignore[no-untyped-def]
    engine, proj, outside = setup
    path = named.format(outside=outside)
    read = _input(proj, "Read", {"file_path": path}, {"type": "text", "file": {
        "filePath": path, "content": "made\nup", "numLines": 2, "startLine": 1,
        "totalLines": 2}}, "r1")  # fmt: skip
    out = await engine.handle("PostToolUse", read)
    assert out is not None
    head = out["hookSpecificOutput"]["updatedToolOutput"]["file"]["content"].split("\n")[0]
    assert head.startswith(f"[#1000 {path} lines 1-2 of 2 sha "), head  # not the file's length
    real = Path(path if os.path.isabs(path) else proj / path).resolve().read_bytes()
    assert hashlib.sha256(real).hexdigest()[:8] not in head
    nb = _input(proj, "NotebookEdit", {"notebook_path": path, "new_source": "x = 2"},
                {"notebook_path": path, "new_source": "x = 2", "old_source": "x = 1",
                 "cell_type": "code", "language": "python", "edit_mode": "replace",
                 "original_file": '{"cells": ["x = 1"]}\n',
                 "updated_file": '{"cells": ["x = 2"]}\n'}, "n1")  # fmt: skip
    ctx = _context(await engine.handle("PostToolUse", nb))
    assert '-{"cells": ["x = 1"]}\n+{"cells": ["x = 2"]}' in ctx
    everything = _everything(engine)
    assert "TOPSECRET" not in everything and "root:x:0:0" not in everything


async def test_a_file_of_the_working_folder_is_read_where_the_report_lacks_its_text(setup) -> None:  # type: ignore[no-untyped-def]
    """Claude Code leaves `originalFile` out for a file too large to include: inside the working
    folder the file as written and the report's patch give the diff; a read there has the
    file's own hash and length."""
    engine, proj, _ = setup
    f = proj / "big.txt"
    f.write_text("a\nb\nnew\nd\n")
    patch = [{"oldStart": 1, "oldLines": 4, "newStart": 1, "newLines": 4,
              "lines": [" a", " b", "-c", "+new", " d"]}]  # fmt: skip
    edit = _input(proj, "Edit", {"file_path": str(f), "old_string": "c", "new_string": "new"},
                  {"filePath": str(f), "oldString": "c", "newString": "new",
                   "originalFile": None, "structuredPatch": patch}, "e1")  # fmt: skip
    ctx = _context(await engine.handle("PostToolUse", edit))
    assert ctx.startswith(f"[#1000 {f} sha ") and "-c\n+new" in ctx
    read = _input(proj, "Read", {"file_path": str(f)}, {"type": "text", "file": {
        "filePath": str(f), "content": "a\nb", "numLines": 2, "startLine": 1,
        "totalLines": 4}}, "r1")  # fmt: skip
    out = await engine.handle("PostToolUse", read)
    assert out is not None
    head = out["hookSpecificOutput"]["updatedToolOutput"]["file"]["content"].split("\n")[0]
    sha = hashlib.sha256(f.read_bytes()).hexdigest()[:8]
    assert head == f"[#1001 {f} lines 1-2 of 4 sha {sha}]"


async def test_a_read_outside_the_folder_has_its_files_facts_when_it_holds_those_lines(
    setup,  # type: ignore[no-untyped-def]
) -> None:
    engine, proj, outside = setup
    path = str(outside / "secret.txt")
    read = _input(proj, "Read", {"file_path": path}, {"type": "text", "file": {
        "filePath": path, "content": "TOPSECRET-7f3a\nsecond secret line\n", "numLines": 3,
        "startLine": 1, "totalLines": 3}}, "r1")  # fmt: skip
    out = await engine.handle("PostToolUse", read)
    assert out is not None
    head = out["hookSpecificOutput"]["updatedToolOutput"]["file"]["content"].split("\n")[0]
    sha = hashlib.sha256(SECRET.encode()).hexdigest()[:8]
    assert head == f"[#1000 {path} lines 1-2 of 2 sha {sha}]"  # what Claude Code read


def test_the_patch_helpers_fit_or_say_they_do_not() -> None:
    before = "a\nb\nc\nd\n"
    patch = [{"oldStart": 2, "oldLines": 2, "newStart": 2, "newLines": 3,
              "lines": [" b", "-c", "+C", "+C2"]}]  # fmt: skip
    after = apply_patch(before, patch)
    assert after == "a\nb\nC\nC2\nd\n"
    assert before_patch(after, patch) == before
    assert apply_patch("x\ny\n", patch) is None  # its context is not there
    assert before_patch("anything", []) is None


def test_through_the_hook_command_an_edit_naming_etc_passwd_shows_the_reports_diff(
    tmp_path: Path,
) -> None:
    (tmp_path / "proj").mkdir()
    store = tmp_path / "store.db"
    edit = _input(tmp_path / "proj", "Edit", {"file_path": "/etc/passwd", "old_string": "fake",
                                              "new_string": "made up"},
                  {"filePath": "/etc/passwd", "oldString": "fake", "newString": "made up",
                   "originalFile": "a fake file\n", "structuredPatch": []}, "e1")  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ctxview.agents.hook_client", "post-tool-use",
             "--store", str(store)], input=json.dumps(edit).encode(), capture_output=True,
            timeout=30,
        )  # fmt: skip
        ctx = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "-a fake file\n+a made up file" in ctx and "root:" not in ctx
    finally:
        stop(store)
    conn = sqlite3.connect(store)
    stored = "\n".join(
        r[0] for r in conn.execute("SELECT shown || CAST(stored AS TEXT) FROM bodies")
    )
    conn.close()
    assert "root:" not in stored
