"""Reading a Claude Code transcript's bytes for the hook engine, never waiting on a FIFO: where
the record of a call ends (waiting briefly for it), the newest compaction summary, where a
sub-agent's transcript is, a file's size."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from ctxview.files.regular import open_regular
from ctxview.importers.common import parse_line

# The most of a transcript past PreCompact looked at for the compaction's summary.
MAX_SUMMARY_BYTES = 64 << 20

# Claude Code appends the assistant record that made a call without waiting for the write, so
# a hook can start before the record is in the file (on a loaded machine, half a second after
# the call), or before the file itself exists (the session's first call: its prompt and the
# call's record are the file's first lines). The wait runs after the answer (the call does not
# wait for it), the session's lock held: below the 1.5 s a recall over MCP waits for that lock.
_WRITTEN_WAIT = 1.2
_WRITTEN_TAIL = 1 << 18


def absent(path: Path) -> bool:
    """Whether nothing is there yet: Claude Code creates the transcript with its first record,
    which can come after the session's first hook."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return False


async def written(path: Path, call_id: Any) -> int | None:
    """Where the transcript's record of the call this hook is for ends (the byte after its
    line), waiting (briefly, bounded) for it to be written, and for the file to be there;
    None when it does not come (or the hook names no call), and then the transcript is read
    as it is (if it is there at all)."""
    if not isinstance(call_id, str) or not call_id:
        return None
    deadline = time.monotonic() + _WRITTEN_WAIT
    while True:
        try:
            end = _record_end(path, call_id)
        except FileNotFoundError:
            end = None  # not created yet: its first records are on their way
        except OSError:
            return None
        if end is not None or time.monotonic() >= deadline:
            return end
        await asyncio.sleep(0.005)


def _record_end(path: Path, call_id: str) -> int | None:
    """The end of the complete line, in the transcript's tail, of the assistant record holding
    the tool_use `call_id` (other records name the call too: its result, hook attachments)."""
    needle = call_id.encode()
    with open_regular(path) as f:  # never a FIFO: the engine serves every session
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - _WRITTEN_TAIL)
        f.seek(start)
        tail = f.read()
    at = tail.find(needle)
    while at != -1:
        line_start = tail.rfind(b"\n", 0, at) + 1
        line_end = tail.find(b"\n", at)
        if line_end == -1:
            return None  # its line is not written whole yet
        if _makes_call(tail[line_start:line_end], call_id):
            return start + line_end + 1
        at = tail.find(needle, line_end)
    return None


def _makes_call(line: bytes, call_id: str) -> bool:
    try:
        rec = parse_line(line)  # no depth raises (a deeper line is not the call's record)
    except ValueError:
        return False
    content = rec.get("message", {}).get("content") if isinstance(rec, dict) and isinstance(
        rec.get("message"), dict) else None  # fmt: skip
    return rec.get("type") == "assistant" and isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == call_id
        for b in content)  # fmt: skip


def agent_file(transcript: str | None, session_id: str, agent: str) -> str | None:
    """Where Claude Code writes a sub-agent's transcript, so an import of it finds this
    session: `<project>/<session>/subagents/agent-<id>.jsonl` (2.1.x), else beside it."""
    if not transcript:
        return None
    base = Path(transcript).parent
    for candidate in (base / session_id / "subagents" / f"agent-{agent}.jsonl",
                      base / f"agent-{agent}.jsonl"):  # fmt: skip
        if candidate.exists():
            return str(candidate.resolve())
    return str(base / session_id / "subagents" / f"agent-{agent}.jsonl")


def size(path: Any) -> int:
    try:
        return Path(path).stat().st_size if isinstance(path, str) else 0
    except OSError:
        return 0


def compact_summary(transcript: Any, start: int = 0) -> str:
    """The newest compaction summary in the transcript past byte `start` (the size at
    PreCompact), "" when it is not there (yet)."""
    if not isinstance(transcript, str):
        return ""
    try:
        with open_regular(transcript) as f:
            f.seek(start)
            lines = f.read(MAX_SUMMARY_BYTES).split(b"\n")
    except OSError:
        return ""
    for raw in reversed(lines):
        if b"isCompactSummary" not in raw:
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        content = rec.get("message", {}).get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""
