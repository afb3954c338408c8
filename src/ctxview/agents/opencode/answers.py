"""What OpenCode's model gets for each tool result: the ctxview plugin (`plugin.js`, written by
`ctxview install opencode`) posts every `tool.execute.after` to the resident engine
(`daemon.py`, route `/hook/opencode.*`), and the text answered here replaces `output.output` in
place before OpenCode stores the part and sends it to the model. The store session is
`oc-<OpenCode's session id>`, the key its import (`importers/opencode.py`) gives the same
session, so an import of OpenCode's database later adds its messages to this one session.

Per tool, what the model gets (README "Use it with OpenCode"):
- read: OpenCode's numbered lines (`12: text`) become the engine's read: `[#id path lines a-b
  of n sha …]` and the lines, or the unchanged stub for a re-read of the same lines.
- bash: the engine's text (id, capped with the elision line); a plain `rg`/`grep`/`find`/`ls`
  is a search (same-result stub).
- grep, glob, list: searches: capped, the same call with the same output is the stub.
- edit, write, multiedit, patch: the diff from OpenCode's own `filediff` (before and after),
  with its id; without one, the capped generic text.
- anything else (webfetch, task, todowrite, an MCP tool but ctxview's own): the capped text.
- recall: the plugin's own tool (its context names the session, which an MCP call does not):
  §4 from this session's store, the recall itself stored.
Each step holds the session's lock (`live.session_lock`, the one `ctxview mcp`'s recall takes)
and first takes in what another writer stored (`Session.catch_up`), so ids are never given twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ctxview.agents import live
from ctxview.agents.claude_code.payload import BadInput
from ctxview.engine.session import Session
from ctxview.files.regular import read_regular
from ctxview.importers import formats
from ctxview.importers.agent_tools import Edit, Read, Search
from ctxview.importers.codex import _search_tool
from ctxview.importers.opencode import tool_how
from ctxview.rules.compaction import files_read_table
from ctxview.store.probe import Probe

if TYPE_CHECKING:
    from ctxview.agents.claude_code.hooks import HookEngine
    from ctxview.agents.hook_trace import Trace

PREFIX = "opencode."  # the plugin's events: opencode.tool, opencode.recall, opencode.compacted
OWN_TOOLS = ("ctxview_",)  # ctxview's MCP tools as OpenCode names them: already answered
MAX_FILE_BYTES = 64 << 20
_EDITS = ("edit", "write", "multiedit")
BUSY_S = 0.9
INLINE_BYTES = 256 << 10  # a file up to this is read on the engine's loop (see _small_inline)


@dataclass
class _Served:
    session: Session
    last_seq: int = 0
    summaries: set[str] = field(default_factory=set)  # compactions recorded (summary message ids)


@dataclass
class _State:
    """The OpenCode sessions one engine serves, over the engine's writer."""

    probe: Probe
    served: dict[str, _Served] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)


T = TypeVar("T")
_STATES: weakref.WeakKeyDictionary[HookEngine, _State] = weakref.WeakKeyDictionary()


class OpenCodeHost:
    """The plugin's events answered over the resident engine's store (`agents/hosts.py`)."""

    def __init__(self, hook: HookEngine) -> None:
        self.hook = hook

    async def respond(self, event: str, payload: dict[str, Any], trace: Trace
                      ) -> dict[str, Any] | None:  # fmt: skip
        return await respond(self.hook, event, payload, trace)

    async def close(self) -> None:
        """Nothing of its own to close: it writes through the resident engine's writer."""


async def respond(engine: HookEngine, event: str, payload: dict[str, Any], trace: Trace
                  ) -> dict[str, Any] | None:  # fmt: skip
    """The plugin's answer for one event: `{"output": text}` for a tool result, `{"table":
    text}` for a compaction; None when OpenCode keeps its own."""
    state = _STATES.get(engine)
    if state is None:
        state = _STATES[engine] = _State(Probe.read_write(engine.store, timeout=BUSY_S))
    sid = payload.get("session_id")
    if not isinstance(sid, str) or not sid or "\x00" in sid:
        raise BadInput("the plugin's input names no session_id")
    key = f"oc-{sid}"
    trace.event = event
    try:
        return await _step(engine, state, event, key, sid, payload, trace)
    finally:
        trace.done()  # in <store>.hook-trace.jsonl beside Claude Code's hooks' (the bench reads it)
        if engine.on_trace is not None:
            engine.on_trace(trace)


async def _step(engine: HookEngine, state: _State, event: str, key: str, sid: str,
                payload: dict[str, Any], trace: Trace) -> dict[str, Any] | None:  # fmt: skip
    async with state.locks.setdefault(key, asyncio.Lock()), live.session_lock(engine.store, key):
        trace.lap("lock")
        served = await _serve(engine, state, key, sid, payload)
        trace.lap("catch_up")
        try:
            if event == "opencode.tool":
                out = await _tool(served.session, payload)
            elif event == "opencode.recall":
                out = await _recall(served.session, payload)
            elif event == "opencode.compacted":
                out = await _compacted(served, payload)
            else:
                out = None
        except BaseException:
            state.served.pop(key, None)  # read again from the store next time
            raise
        served.last_seq = state.probe.last_seq(key)
        trace.lap("rules")
    return out


async def _serve(engine: HookEngine, state: _State, key: str, sid: str,
                 payload: dict[str, Any]) -> _Served:  # fmt: skip
    """The session, made on first sight (or resumed from the store), up to date with what
    another writer (recall over MCP, an import) stored since this engine last wrote."""
    served = state.served.get(key)
    if served is not None:
        last = state.probe.last_seq(key)
        if last != served.last_seq:
            served.session.catch_up(state.probe.results_after(key, served.last_seq),
                                    state.probe.next_rid(key))  # fmt: skip
            served.last_seq = last
        return served
    writer = engine.writer
    assert writer is not None
    info = await writer.session_info(key)
    if info is None:
        cwd = d if isinstance(d := payload.get("directory"), str) and d else "/"
        db = payload.get("database")
        session = await Session.start(
            writer, cwd, title=Path(cwd).name or "opencode", source=formats.OPENCODE,
            session_id=key, source_ref=sid,
            source_path=db if isinstance(db, str) and db else None,
            data=json.dumps({"hooked": True}),
        )  # fmt: skip
    else:
        async with writer.batch():
            session = await Session.resume(writer, key)
        data = json.loads(info["data"] or "{}")
        if not data.get("hooked"):
            await writer.update_session(key, data=json.dumps({**data, "hooked": True}))
        if info["ended"] is not None:
            await writer.update_session(key, ended=None)
    served = _Served(session, state.probe.last_seq(key))
    state.served[key] = served
    return served


async def _tool(session: Session, p: dict[str, Any]) -> dict[str, Any] | None:
    name = p.get("tool_name")
    output = p.get("output")
    if not isinstance(name, str) or not isinstance(output, str) or name.startswith(OWN_TOOLS):
        return None
    args = a if isinstance(a := p.get("args"), dict) else {}
    meta = m if isinstance(m := p.get("metadata"), dict) else {}
    ref = c if isinstance(c := p.get("tool_use_id"), str) and c else None
    seen = len(output)
    how = tool_how(name, args, output, meta, True)
    if not isinstance(how, Edit) and name in _EDITS and "before" in p:
        path = args.get("filePath")
        how = await _small_inline(path, _edited, args, p["before"]) or how
    if isinstance(how, Read):
        shown = await _read(session, args, how, ref, seen)
    elif isinstance(how, Search):
        shown = await session.insert(how.tool, args, output, call_ref=ref, seen=seen)
    elif isinstance(how, Edit):
        shown = await session.insert_edit(
            "edit" if how.old is not None else "write", {"path": how.path, **args},
            [(how.path, session.key(how.path), how.old, how.new)], call_ref=ref, seen=seen,
        )  # fmt: skip
    elif name == "bash":
        command = c if isinstance(c := args.get("command"), str) else ""
        tool = _search_tool(command) or "bash"
        shown = await session.insert(tool, {"command": command}, output, call_ref=ref, seen=seen)
    else:
        shown = await session.insert(name, args, output, call_ref=ref, seen=seen)
    return {"output": shown}


async def _read(session: Session, args: dict[str, Any], how: Read, ref: str | None, seen: int
                ) -> str:  # fmt: skip
    """OpenCode's read through §1/§2: the file's real hash and length when it can be read (the
    plugin runs right after the read), else a stand-in that changes with what was shown."""
    sha, total = await _small_inline(how.path, _file_facts, how)
    own = total is not None
    if total is None:
        total = how.total if how.total is not None else how.first + len(how.lines) - 1
    return await session.insert_read(
        {"path": how.path, **{k: v for k, v in args.items() if k != "filePath"}},
        how.path, session.key(how.path), how.first, how.lines, total, sha,
        call_ref=ref, seen=seen, own=own,
    )  # fmt: skip


async def _recall(session: Session, p: dict[str, Any]) -> dict[str, Any]:
    """§4 for the plugin's own `recall` tool: this session's stored result (an unknown id is
    the engine's one-line answer), stored itself under OpenCode's call id."""
    given = a if isinstance(a := p.get("input"), dict) else {}
    args = {k: v for k, v in given.items() if k in ("id", "offset", "limit")}
    ref = c if isinstance(c := p.get("tool_use_id"), str) and c else None
    return {"output": await session.run("recall", args, call_ref=ref)}


async def _small_inline(path: Any, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`, which reads the file at `path`: on the loop for a small file (a thread hop
    cost more than the read, 1-2 ms of the plugin's 5 on a loaded machine), else on a thread."""
    try:
        small = isinstance(path, str) and os.stat(path).st_size <= INLINE_BYTES
    except (OSError, ValueError):
        small = True  # not there, or not a path: fn finds it so at once
    return fn(*args) if small else await asyncio.to_thread(fn, *args)


def _edited(args: dict[str, Any], before: Any) -> Edit | None:
    """The edit as the file was before it (the plugin read it in `tool.execute.before`; None
    for a new file) and is now; None when the file cannot be read."""
    path = args.get("filePath")
    if not isinstance(path, str) or not os.path.isabs(path) or not (
            before is None or isinstance(before, str)):  # fmt: skip
        return None
    try:
        after = read_regular(path, MAX_FILE_BYTES).decode("utf-8")
    except (OSError, ValueError):
        return None
    return Edit(path, before, after)


def _file_facts(how: Read) -> tuple[str, int | None]:
    data: bytes | None = None
    if os.path.isabs(how.path):
        try:
            data = read_regular(how.path, MAX_FILE_BYTES)
        except (OSError, ValueError):
            data = None
    if data is not None:
        text = data.decode("utf-8", "replace").split("\n")
        window = text[how.first - 1 : how.first - 1 + len(how.lines)]
        if [w.removesuffix("\r") for w in window] != [x.removesuffix("\r") for x in how.lines]:
            data = None  # changed since OpenCode read it: not the file the model was shown
    if data is None:
        shown = "\n".join(how.lines).encode("utf-8", "surrogatepass")
        stand_in = f"ctxview-opencode\0{how.path}\0{how.first}\0{hashlib.sha256(shown).hexdigest()}"
        return hashlib.sha256(stand_in.encode("utf-8", "surrogatepass")).hexdigest(), None
    count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return hashlib.sha256(data).hexdigest(), count


async def _compacted(served: _Served, p: dict[str, Any]) -> dict[str, Any] | None:
    """§7 after OpenCode compacted (the plugin saw its summary message): the boundary with the
    summary, the dedupe table emptied, and the files-read table for the plugin to put after the
    summary. Once per summary message."""
    mark = m if isinstance(m := p.get("summary_id"), str) else ""
    session = served.session
    reads = session.dedupe.newest_reads(session.config["compaction.rows"])
    table = files_read_table(reads, session.config)
    if mark and mark in served.summaries:
        return None
    summary = s if isinstance(s := p.get("summary"), str) else ""
    await session.compact(summary, data={"source": "hook", "summary_id": mark, "table": table})
    served.summaries.add(mark)
    return {"table": table} if table else None
