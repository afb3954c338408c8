"""Which conversation of a Claude Code session tree made an MCP call.

Claude Code runs one MCP server per session and tells it nothing of the agent that calls: a
sub-agent's `mcp__ctxview__recall` carries the same `CLAUDE_CODE_SESSION_ID` as its parent's
and, in `_meta`, only `claudecode/toolUseId`. The call's tool_use is in the transcript of the
conversation that made it (the session's own `<id>.jsonl`, or a sub-agent's
`<id>/subagents/agent-<agent>.jsonl`), written as the call starts: the transcript holding it
names the caller. Looked for only when the session has sub-agent transcripts (else it is the
session itself, at once), in their tails, for at most `WAIT` seconds (Claude Code writes the
record within a few tens of milliseconds of the call); not found, the session itself."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from ctxview.files.regular import open_regular
from ctxview.store.probe import Probe

WAIT = 1.0  # seconds: the longest a recall waits for its call's record
TAIL = 1 << 20  # bytes of each transcript's end looked at first
RECENT = 60.0  # seconds: a transcript not written for this long made no call just now
_POLL = 0.005


async def calling_session(probe: Probe, root: str, tool_use_id: str | None,
                          wait: float = WAIT) -> str:  # fmt: skip
    """The store session (`root`, or a sub-agent's `cc-<agent>`) whose conversation holds the
    tool_use `tool_use_id`."""
    if not tool_use_id:
        return root
    source = probe.source_path(root)
    if source is None:
        return root
    main = Path(source)
    folder = main.with_suffix("") / "subagents"
    if not folder.is_dir():
        return root  # no sub-agent has run: nobody else could have called
    needle = tool_use_id.encode()
    seen: dict[Path, int] = {}  # file -> bytes looked at so far
    deadline = time.monotonic() + wait
    recent = time.time() - RECENT
    while True:
        for path in [*sorted(folder.glob("agent-*.jsonl")), main]:
            if path not in seen and not _written_since(path, recent):
                continue  # a sub-agent that finished long ago
            agent = path.stem.removeprefix("agent-") if path is not main else None
            if _holds_call(path, seen, needle, tool_use_id, sidechain=agent is not None):
                return f"cc-{agent}" if agent else root
        if time.monotonic() >= deadline:
            return root
        await asyncio.sleep(_POLL)


def _written_since(path: Path, when: float) -> bool:
    try:
        return path.stat().st_mtime >= when
    except OSError:
        return False


def _holds_call(path: Path, seen: dict[Path, int], needle: bytes, tool_use_id: str, *,
                sidechain: bool) -> bool:  # fmt: skip
    """Whether the part of `path` not looked at yet holds the assistant record that made the
    call (`seen[path]` moves to the last complete line read)."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            start = seen.get(path, max(0, size - TAIL))
            if size <= start:
                return False
            f.seek(start)
            data = f.read(size - start)
    except OSError:
        return False
    end = data.rfind(b"\n") + 1
    seen[path] = start + end  # an incomplete last line is read again next time
    if needle not in data[:end]:
        return False
    for line in data[:end].split(b"\n"):
        if needle in line and _made_call(line, tool_use_id, sidechain):
            return True
    return False


def _made_call(line: bytes, tool_use_id: str, sidechain: bool) -> bool:
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return False
    if not isinstance(rec, dict) or rec.get("type") != "assistant":
        return False
    if not sidechain and rec.get("isSidechain"):
        return False  # an inline sidechain (Claude Code 1.0.x): not the session's own call
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == tool_use_id
        for b in content
    )
