"""What counts as a Gemini compression in its BeforeModel hook's messages (agents/gemini/
compression.py): a summary that Gemini's fixed answer follows, found in the request alone (the
hook needs no earlier request), never a request without one (a sub-agent's, a rewind); and the
shell's test in the hook's command that keeps those from the engine."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ctxview.agents.gemini import install
from ctxview.agents.gemini.compression import ACK, digest, summary_at, summary_in, with_table

CTX = "<session_context>the folder</session_context>"
BEFORE = [("user", CTX + "read it"), ("model", "reading"), ("user", "more")]


def test_a_summary_answered_by_gemini_is_a_compression() -> None:
    now = [("user", CTX + "<state_snapshot>s</state_snapshot>"), ACK, ("user", "Please continue.")]
    assert summary_at(now) == 0
    assert summary_in(now[0][1]) == "<state_snapshot>s</state_snapshot>"
    assert summary_in(CTX + "\nplain words") == "plain words"  # no snapshot: past the context
    messages = with_table(now, digest(now[0][1]), "## Files read before this summary")
    assert messages is not None
    assert messages[0]["content"] == now[0][1] + "\n\n## Files read before this summary"
    assert [m["content"] for m in messages[1:]] == [ACK[1], "Please continue."]


def test_other_histories_are_not() -> None:
    assert summary_at([*BEFORE, ("model", "done")]) is None  # it grew
    assert summary_at(BEFORE[:2]) is None  # a rewind
    assert summary_at([("user", "a sub-agent's task"), ("model", "ok")]) is None
    assert summary_at([("model", "x"), ACK]) is None  # the model's own words, not a summary
    assert with_table(BEFORE, digest("gone"), "table") is None


def _hook(tmp_path: Path, request: dict[str, Any]) -> str:
    """What the installed BeforeModel command runs, through bash as Gemini runs it: the hook
    client's argv (a stand-in interpreter that prints it and its input), or nothing."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho "ran $*"; cat\n')
    fake.chmod(0o755)
    command = install.before_model_command(tmp_path / "store.db", python=str(fake))
    payload = json.dumps({"hook_event_name": "BeforeModel", "llm_request": request})
    done = subprocess.run(["bash", "-c", command], input=payload, capture_output=True,
                          text=True, check=True, timeout=30)  # fmt: skip
    return done.stdout


def test_the_hook_command_runs_the_client_only_for_a_summary(tmp_path: Path) -> None:
    plain = {"messages": [{"role": r, "content": t} for r, t in BEFORE]}
    assert _hook(tmp_path, plain) == ""
    held = [("user", CTX + "<state_snapshot>s</state_snapshot>"), ACK, ("user", "go on")]
    request = {"messages": [{"role": r, "content": t} for r, t in held]}
    out = _hook(tmp_path, request)
    ran, _, given = out.partition("\n")
    assert (
        ran.startswith("ran -I -S -c ")
        and "import hook_client" in ran
        and ran.endswith(f"gemini --store {tmp_path}/store.db")
    )
    assert json.loads(given)["llm_request"] == request  # the hook input, as Gemini gave it
