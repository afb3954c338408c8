"""No depth of hook input raises: a `tool_response` nested 201 to 100,000 levels deep fails its
own hook at once, recorded with the session, tool and call it names (Claude Code keeps its own
output); one within 200 levels is served as any other; the engine goes on. Through the hook
command Claude Code runs, against the real engine process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxview.agents import failures
from ctxview.agents.hook_client import stop


def _raw(tmp: Path, ref: str, depth: int) -> bytes:
    head = {"session_id": "deep-1", "cwd": str(tmp / "proj"),
            "transcript_path": str(tmp / "none.jsonl"), "hook_event_name": "PostToolUse",
            "tool_name": "WebSearch", "tool_use_id": ref, "tool_input": {"query": "q"}}  # fmt: skip
    text = json.dumps(head)[:-1]
    deep = "[" * (depth - 1) + '"x"' + "]" * (depth - 1)  # json.dumps cannot write it
    return f'{text}, "tool_response": {deep}}}'.encode()


def _hook(store: Path, raw: bytes) -> bytes:
    done = subprocess.run([sys.executable, "-m", "ctxview.agents.hook_client",
                           "post-tool-use", "--store", str(store)], input=raw,
                          capture_output=True, timeout=30)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout


@pytest.mark.parametrize("depth", [201, 500, 990, 1025, 5000, 100_000])
def test_a_deep_tool_response_fails_its_hook_recorded(tmp_path: Path, depth: int) -> None:
    (tmp_path / "proj").mkdir()
    store = tmp_path / "store.db"
    try:
        assert _hook(store, _raw(tmp_path, "d1", depth)) == b""
        (found,) = [f for f in failures.read(store) if f.get("tool_use_id") == "d1"]
        assert found["session_id"] == "deep-1" and found["tool_name"] == "WebSearch"
        assert "nested deeper than 200 levels" in found["error"]
        # A response within the bound is served; the engine went on.
        out = json.loads(_hook(store, _raw(tmp_path, "d2", 150)))
        assert out["hookSpecificOutput"]["additionalContext"] == (
            "[#1000] is the id of this WebSearch result.")  # fmt: skip
    finally:
        stop(store)


def test_a_deep_input_is_recorded_when_even_its_failure_is_too_deep_to_parse(
    tmp_path: Path,
) -> None:
    """What the hook client records when it cannot reach the engine (here: forced) names the
    session, tool and call of an input json cannot parse."""
    store = tmp_path / "store.db"
    try:
        done = subprocess.run([sys.executable, "-m", "ctxview.agents.hook_client",
                               "post-tool-use", "--store", str(store)],
                              input=_raw(tmp_path, "d3", 100_000), capture_output=True,
                              timeout=30, env={**os.environ, "CTXVIEW_HOOK_FAIL": "1"})  # fmt: skip
    finally:
        stop(store)  # the hook started the engine (it fails the call itself)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    (found,) = failures.read(store)
    assert (found["event"], found["tool_use_id"], found["session_id"]) == (
        "PostToolUse", "d3", "deep-1")  # fmt: skip
