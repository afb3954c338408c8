"""pi's extension through the resident engine: what each event of ctxview's pi extension
(`extension.ts`, sending `pi.<event>` to the engine's command socket) does to the store session
`pi-<pi's session id>`, and the text the model gets instead of pi's own.

A step runs under the session's lock (in this process and across processes: `live.session_lock`,
as the MCP server's), in order: the session up to date with the store, pi's session file read
up to now (its prompts and the model's messages land before the call's result; a result the
extension stored is skipped by the import, `importers.pi`), then the rules, the result stored,
and the answer. So the hooked session and `ctxview import` of pi's file are one session.

What the model gets, per pi tool (README "Use it with pi" has the table):
- read: the rules' read (id and bracket, the unchanged stub), from pi's lines (`importers.pi.
  read_of`) and the file's real hash and length; an image read keeps pi's output.
- grep, find, ls: searches (capped; the same call with the same output is the same-result stub);
  bash: capped with the elision line, a plain `rg`/`grep`/`find`/`ls` a search as well.
- edit, write: the diff, from the file's text before (the extension reads it at `tool_call`) and
  after; without the text before, pi's answer with an id.
- recall: the extension's own tool, answered by the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxview.agents import live
from ctxview.agents.claude_code.served import Served, Sessions
from ctxview.agents.claude_code.tool_answers import MAX_FILE_BYTES, _file_facts
from ctxview.agents.hook_trace import Trace
from ctxview.engine.session import Session
from ctxview.files.regular import read_regular
from ctxview.importers.codex import _search_tool
from ctxview.importers.formats import PI
from ctxview.importers.pi import read_of
from ctxview.importers.runner import FileImporter
from ctxview.rules.compaction import files_read_table

if TYPE_CHECKING:
    from ctxview.agents.claude_code.hooks import HookEngine

PREFIX = "pi."  # the events of ctxview's pi extension, as it names them to the engine
_SEARCHES = {"grep": "grep", "find": "glob", "ls": "list"}
_EDITS = ("edit", "write")
LOCK_WAIT = 1.5  # seconds a step waits for another writer of the session (inside pi's 2 s)


class BadEvent(Exception):
    """An extension's request ctxview cannot read (the sentence says what)."""

    says_it_all = True


class _PiSessions(Sessions):
    """The served pi sessions: made as the importer names them, hooked from the start."""

    async def start(self, sid: str, payload: dict[str, Any]) -> Session:
        cwd = c if isinstance(c := payload.get("cwd"), str) and c else "/"
        return await Session.start(
            self._writer, cwd, title=Path(cwd).name or "pi", source=PI, session_id=sid,
            source_path=_session_file(payload), source_ref=payload.get("session_id"),
            data=json.dumps({"hooked": True}),
        )  # fmt: skip


class PiEngine:
    """Answers the pi extension's events for any number of pi sessions over one store."""

    def __init__(self, hook: HookEngine) -> None:
        assert hook.writer is not None and hook._read is not None and hook._ids is not None
        self.hook = hook
        self.store = hook.store
        self.writer = hook.writer
        self.served: dict[str, Served] = {}
        self.sessions = _PiSessions(hook.writer, hook._read, hook._ids, LOCK_WAIT, self.served)
        self._locks: dict[str, asyncio.Lock] = {}
        self._tables: dict[str, str] = {}  # the files-read table of each session's compaction

    async def close(self) -> None:
        """Nothing of its own to close: it writes through the resident engine's writer."""

    async def respond(self, event: str, payload: dict[str, Any], trace: Trace
                      ) -> dict[str, Any] | None:  # fmt: skip
        """The answer to one event of the pi extension (`pi.tool_result`, `pi.compact`, …)."""
        event = event.removeprefix(PREFIX)
        pid = payload.get("session_id")
        if not isinstance(pid, str) or not pid or "/" in pid:
            raise BadEvent("a pi extension request without its session id")
        sid = f"pi-{pid}"
        trace.event, trace.tool = f"{PREFIX}{event}", str(payload.get("tool_name") or "")
        try:
            return await self._step(sid, event, payload, trace)
        finally:
            trace.done()  # in <store>.hook-trace.jsonl, as the other hooks' (the bench reads it)
            if self.hook.on_trace is not None:
                self.hook.on_trace(trace)

    async def _step(self, sid: str, event: str, payload: dict[str, Any], trace: Trace
                    ) -> dict[str, Any] | None:  # fmt: skip
        lock = self._locks.setdefault(sid, asyncio.Lock())
        async with lock, live.session_lock(self.store, sid, timeout=LOCK_WAIT):
            trace.lap("lock")
            try:
                if event == "compact":
                    return await self._compacted(sid, payload)
                served = await self._ready(sid, payload, trace)
                out = await self._event(served, event, payload)
                trace.lap("rules")
            except BaseException:
                if sid in self.served:  # read from the store again at the next step
                    self.sessions.forget(self.served[sid], owner=self.writer)
                raise
        return out

    async def _compacted(self, sid: str, payload: dict[str, Any]) -> dict[str, Any]:
        """§7 after pi compacted: the files-read table as it stands before the compaction, for
        the model after pi's summary. The boundary itself is pi's `compaction` entry, which the
        import of pi's file stores (its summary, the table, the dedupe table emptied), so the
        hooked session and an import of the file hold one compaction, not two."""
        served = await self.sessions.serve(sid, payload)
        session = served.session
        table = files_read_table(session.dedupe.newest_reads(session.config["compaction.rows"]),
                                 session.config)  # fmt: skip
        await self._ready(sid, payload)
        self._tables[sid] = table
        return {"table": table}

    async def _ready(self, sid: str, payload: dict[str, Any], trace: Trace | None = None
                     ) -> Served:  # fmt: skip
        """The session up to date: what others stored, then pi's file up to now."""
        served = await self.sessions.serve(sid, payload)
        if trace is not None:
            trace.lap("catch_up")
        path = _session_file(payload)
        if path is not None and os.path.isfile(path):
            # One importer per file for as long as the session is served (as Claude Code's
            # transcript): each step reads only what pi appended, where a new importer found the
            # file's format and its session's state in the store again at every call.
            importer = served.importers.get(Path(path))
            if importer is None:
                importer = served.importers[Path(path)] = FileImporter(self.writer, path)
            await importer.step()
        served = await self.sessions.serve(sid, payload)
        if trace is not None:
            trace.lap("transcript")
        return served

    async def _event(self, served: Served, event: str, payload: dict[str, Any]
                     ) -> dict[str, Any] | None:  # fmt: skip
        session = served.session
        if event == "session_start":
            return {"table": self._tables.get(session.id)}
        if event == "tool_result":
            text = await tool_result(session, payload)
            return {} if text is None else {"text": text}
        if event == "recall":
            args = _table(payload.get("input"))
            call = payload.get("tool_call_id")
            text = await session.run("recall", {k: v for k, v in args.items()
                                                if k in ("id", "offset", "limit")},
                                     call_ref=call if isinstance(call, str) else None)  # fmt: skip
            return {"text": text}
        if event == "shutdown":
            await session.end()
            return {}
        raise BadEvent(f"the pi extension's event {event[:40]!r} is not one ctxview knows")


async def tool_result(session: Session, p: dict[str, Any]) -> str | None:
    """The text the model gets for one of pi's built-in tools' results, stored; None to keep
    pi's own (an image)."""
    name = str(p.get("tool_name") or "")
    args = _table(p.get("input"))
    content = p.get("content")
    if not isinstance(content, list) or any(
            not isinstance(b, dict) or b.get("type") != "text" for b in content):  # fmt: skip
        return None  # an image, or a shape pi may add: its own output stays
    text = "\n".join(str(b.get("text", "")) for b in content)
    call = p.get("tool_call_id")
    ref = call if isinstance(call, str) and call else None
    error = bool(p.get("is_error"))
    path = args.get("path") if isinstance(args.get("path"), str) else None
    ts = time.time()
    if name == "read" and path and not error:
        read = read_of(path, args, text)
        if read is not None:
            key = session.key(path)
            sha, total = await asyncio.to_thread(_file_facts, session, _abs(p, path),
                                                 read.first, read.lines, read.total or 0)  # fmt: skip
            own = total is not None  # else the sha is a stand-in (the file not readable)
            total = total if total is not None else (read.total or read.first + len(read.lines) - 1)
            return await session.insert_read(args, path, key, read.first, read.lines, total, sha,
                                             call_ref=ref, seen=len(text), ts=ts,
                                             own=own)  # fmt: skip
    if name in _EDITS and path and not error and "before" in p:
        before = p.get("before")
        after = await asyncio.to_thread(_text_of, _abs(p, path))
        if after is not None and (before is None or isinstance(before, str)):
            # pi's own answer only says the edit was made: the diff says more.
            return await session.insert_edit(name, args, [(path, session.key(path), before,
                                                           after)], call_ref=ref,
                                             seen=len(text), ts=ts)  # fmt: skip
    tool = _SEARCHES.get(name) if not error else None
    if name == "bash" and not error and isinstance(args.get("command"), str):
        tool = _search_tool(args["command"])
    if tool is not None:
        return await session.insert(tool, args, text, call_ref=ref, seen=len(text), ts=ts)
    return await session.insert(name or "tool", args, text, call_ref=ref, seen=len(text), ts=ts)


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _abs(p: dict[str, Any], path: str) -> str:
    cwd = p.get("cwd") if isinstance(p.get("cwd"), str) else "/"
    return os.path.normpath(os.path.join(str(cwd), path.removeprefix("@")))


def _text_of(path: str) -> str | None:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return read_regular(path, MAX_FILE_BYTES).decode("utf-8")
    return None


def _session_file(payload: dict[str, Any]) -> str | None:
    f = payload.get("session_file")
    return os.path.realpath(f) if isinstance(f, str) and f else None
