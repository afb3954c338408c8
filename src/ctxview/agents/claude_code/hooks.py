"""Claude Code's hooks through the engine: what each hook event does to the store session
`cc-<session_id>`, and the hook output that gives the model the 3.0.0 text.

A `HookEngine` keeps the engine `Session` of each Claude Code session it has served in memory
(it lives in the resident process, `daemon.py`) and, before every step, brings it up to date
with whatever another writer (the MCP server's recall, an import) added to the store since: the
events past the last sequence number it knows go through `Session.catch_up`, which builds the
state as `Session.resume` does, so a hook costs the same at 10 or 10,000 results.

A tool call is answered before it is stored: its steps go through its session tree's lane
(`_Lane`: the session and its sub-agents, one id counter, one lock keyed by the tree's root),
its ids reserved in the store and its events journaled before the answer, and stored after the
transcript's record of the call once the answer is out (`_rules`, `_after`).

What the model gets, per tool (README "Use it with Claude Code / Codex" has the table):
- Read: Claude Code numbers `file.content` from `file.startLine` itself, so the bracket goes in
  as the line before the content and `startLine` one less: `0\t[#1000 a.py lines 1-3 of 3 sha
  …]`, `1\t…`. An unchanged re-read is the one-line stub at that place. Claude Code reads a
  whole file when no limit is given: the rules' read window (2000 lines) applies here
  (`importers.claude_code.read_lines`), the rest a read away with `offset`.
- Bash: `stdout` becomes the engine's text (id, output capped, `stderr` after `stdout`); a plain
  `rg`/`grep`/`find`/`ls` (the Codex importer's classification) is a search, so the same search
  with the same output is the same-result stub.
- Grep, Glob (and LS, before 2.1): searches. The text Claude Code would send (built as its own
  rendering builds it from the output's fields) is the result: capped, and the same call with
  the same text again is the same-result stub. It goes back where Claude Code sends a field as
  it is: Grep in content mode (`content`), Glob as its `filenames`, one a line.
- WebFetch: `result` becomes the engine's text (id, capped); never a stub (§6 is for searches).
- Edit, MultiEdit, Write, NotebookEdit: Claude Code's own answer names the file (or the cell)
  only, so the id and the diff go as the hook's `additionalContext`, which follows the result.
- Anything else: a string output or a `content` list of text blocks is replaced by the capped
  generic text; another shape keeps its output and gets its id as `additionalContext`.
- `mcp__ctxview__*`: untouched (the MCP server already answered through the engine).
- A background task's report (UserPromptSubmit of a `<task-notification>`): stored, its id as
  the prompt's context.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import stat
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxview.agents import live
from ctxview.agents.claude_code.edits import before_patch, edited
from ctxview.agents.hook_journal import Journal
from ctxview.agents.hook_trace import Trace
from ctxview.engine.result import Result
from ctxview.engine.session import Session
from ctxview.files import safe_fs
from ctxview.files.regular import is_regular, open_regular, read_regular
from ctxview.importers.claude_code import NOTIFICATION_TOOL, read_lines, task_notification
from ctxview.importers.codex import _search_tool
from ctxview.importers.common import TooDeep, parse_line
from ctxview.importers.detect import CLAUDE
from ctxview.importers.follow import sub_agents
from ctxview.importers.runner import FileImporter
from ctxview.rules.compaction import files_read_table
from ctxview.store.probe import Probe, SqliteError
from ctxview.store.records import Body, Event
from ctxview.store.reserve import IdReserver
from ctxview.store.writer import Writer
from ctxview.tools import ToolError

OWN_TOOLS = "mcp__ctxview__"
PER_CALL = ("PostToolUse", "PostToolUseFailure")  # answered before the transcript is read
_EDITS = {"Edit": "edit", "MultiEdit": "multiedit", "Write": "write"}
# Claude Code's searches as the engine's `dedupe.by_result` tools (LS: versions before 2.1).
_SEARCHES = {"Grep": "grep", "Glob": "glob", "LS": "list"}
_TOOL_NAMES = {"Bash": "bash", "Read": "read", "NotebookEdit": "edit", **_EDITS, **_SEARCHES}
# The line Claude Code (2.1.328) puts before a search's results when its time limit stopped it.
_STOPPED = ("The search stopped before it finished, most likely at its time limit, so these "
            "results are incomplete: more matches may exist. Search a more specific path or "
            "pattern.")  # fmt: skip
# Grep fields Claude Code turns into text around `content`: in our answer that text is already
# part of the result, so they go.
_GREP_NOTES = ("appliedLimit", "appliedOffset", "timedOut")
# The longest result Claude Code 2.1.328 sends as it is, per tool (its maxResultSizeChars; Bash's
# is its 30,000-character output limit, applied again to what the hook gives back); a longer one
# reaches the model as a 2 KB preview, so the cap is fitted under it.
SHOWS_AT_MOST = {"Grep": 20_000, "Bash": 30_000}
_SHOWS_AT_MOST_ELSE = 50_000
# A Bash output longer than this (2.1.328's default `bashOutputMaxChars`) Claude Code saves to a
# file before any hook sees it: the hook gets, and stores, its note and preview.
SAVED_PAST = {"Bash": 30_000}
# A hook's writes give up well inside Claude Code's 2 s budget rather than wait on a lock.
BUSY_MS = 900
# The most of a file a hook reads (an edited file, a read file's hash): past it, the file is
# not read (the model still gets its id; an edit's diff comes from Claude Code's own strings).
MAX_FILE_BYTES = 64 << 20
# The most of a transcript past PreCompact looked at for the compaction's summary.
MAX_SUMMARY_BYTES = 64 << 20
# The transcript's import commits this often: another session's hook waits at most about
# this long for the store behind it (a huge transcript seen for the first time).
IMPORT_COMMIT_SECONDS = 0.05


class HookError(Exception):
    """A hook input this engine does not know how to handle (recorded, never shown)."""


class BadInput(HookError):
    """A hook input that is not a JSON object this engine may read (the sentence says why)."""

    says_it_all = True  # failures.describe


def hook_input(raw: bytes) -> dict[str, Any]:
    """The hook input as Claude Code sent it (either transport): a JSON object nested at most
    `importers.common.MAX_DEPTH` levels deep; BadInput otherwise (no depth raises)."""
    try:
        payload = parse_line(raw)
    except TooDeep as exc:
        raise BadInput(f"the hook input is {exc}") from None
    except ValueError as exc:
        raise BadInput(f"the hook input is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise BadInput("the hook input is not a JSON object")
    return payload


@dataclass
class Served:
    """One Claude Code session as the resident engine holds it."""

    session: Session
    last_seq: int = 0
    trigger: str | None = None  # the PreCompact trigger, for the compaction that follows
    compact_from: int = 0  # the transcript's size at PreCompact: its summary comes after
    # (seq of a compaction stored without its summary, the transcript, where to look from)
    summary_due: tuple[int, str, int] | None = None
    # The transcript (and its sub-agents' files) imported as it grows: messages, usage and
    # sub-agents land in order around the results the hook stores.
    importers: dict[Path, FileImporter] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    reserved: int = 0  # the store's counter as this engine set it: ids below are its own


def session_id_of(payload: dict[str, Any]) -> str:
    sid = payload.get("session_id")
    if not isinstance(sid, str) or not sid:
        raise HookError("the hook input has no session_id")
    agent = payload.get("agent_id")
    return f"cc-{agent}" if isinstance(agent, str) and agent else f"cc-{sid}"


def tree_root(payload: dict[str, Any]) -> str:
    """The store session at the top of the hook's session tree: a sub-agent's hook input names
    its root session as `session_id` (and itself as `agent_id`)."""
    session_id_of(payload)
    return f"cc-{payload['session_id']}"


def _as_root(payload: dict[str, Any]) -> dict[str, Any]:
    """A sub-agent's hook input as its root session's (the same `session_id` and transcript)."""
    return {k: v for k, v in payload.items() if k not in ("agent_id", "agent_type")}


def _handed_back(payload: dict[str, Any]) -> str | None:
    """The agent id a finished Agent (or Task) call names: its sub-agent ran in the foreground
    and its result is this call's (a background one's call answers `async_launched` at once)."""
    if payload.get("tool_name") not in ("Agent", "Task"):
        return None
    resp = payload.get("tool_response")
    if not isinstance(resp, dict) or resp.get("status") != "completed":
        return None
    agent = resp.get("agentId")
    return agent if isinstance(agent, str) and agent else None


def _resolved(path: Any) -> str | None:
    return str(Path(path).expanduser().resolve()) if isinstance(path, str) and path else None


class HookEngine:
    """Answers hook events for any number of Claude Code sessions over one store."""

    def __init__(self, store: Path) -> None:
        self.store = Path(store)
        self.writer: Writer | None = None
        self._read: Probe | None = None
        self._ids: IdReserver | None = None
        self.served: dict[str, Served] = {}
        self._lanes: dict[str, _Lane] = {}  # session tree (its root's id) -> its lane
        self._held: dict[tuple[str, str], _Held] = {}  # (session, call id) -> its events
        # The Claude Code sessions (not sub-agents) seen and not ended: the engine stays up.
        self.open_sessions: set[str] = set()
        self._port: int | None = None  # where Claude Code's http hooks reach this engine
        self._journal = Journal(store)  # the held calls, should this engine be killed
        self._recovered: set[str] = set()  # sessions with calls a killed engine held
        self._steps: set[asyncio.Task[None]] = set()
        self.on_trace: Callable[[Trace], None] | None = None  # each step's trace, when done

    async def open(self) -> None:
        from ctxview.agents.endpoint import load

        found = load(self.store)
        self._port = found.port if found is not None else None
        self.writer = await Writer.open(self.store)
        # The writer waits 10 s for a lock; a hook must give up inside its budget instead.
        await self.writer.set_busy_timeout(BUSY_MS)
        self._read = Probe.read_write(self.store, timeout=BUSY_MS / 1000)
        # Ids reserved before an answer: a connection of their own that never waits on the lock.
        self._ids = IdReserver(self.store)
        await self._recover()

    async def _recover(self) -> None:
        """The calls an engine killed after their answer held (`hook_journal`): those with a
        record to follow wait for the import of their transcript (`catch_up_open`), the others
        are stored now."""
        for key, steps in self._journal.read():
            held = _Held(self.writer)  # type: ignore[arg-type]
            held.steps, held.key = steps, key
            if self._stored(held):
                continue
            if key is not None:
                self._held[key] = held
                self._recovered.add(key[0])
            else:
                await self._commit(held, Trace())
        if not self._held:
            self._journal.clear()

    def _stored(self, held: _Held) -> bool:
        assert self._read is not None
        return bool(held.steps) and self._read.has_results(held.rids())

    async def close(self) -> None:
        await self.settled()
        if self.writer is not None:
            await self.writer.close()
        if self._read is not None:
            self._read.close()
        if self._ids is not None:
            self._ids.close()
        self._journal.close()

    # The face

    async def handle(self, event: str, payload: dict[str, Any], trace: Trace | None = None
                     ) -> dict[str, Any] | None:  # fmt: skip
        """The hook's JSON output for one event, or None for none (Claude Code keeps its own),
        once the whole step is done (what `respond` leaves running included)."""
        answer, done = self._begin(event, payload, trace or Trace())
        await asyncio.shield(done)
        return answer.result()

    async def respond(self, event: str, payload: dict[str, Any], trace: Trace | None = None
                      ) -> dict[str, Any] | None:  # fmt: skip
        """The hook's JSON output as soon as it is known. For a tool call that is before the
        transcript is read: taking in what the model said before the call and storing the
        call's events after it go on in the session tree's lane (`_Lane`), which holds the
        tree's lock until they are done, so another process's step in the tree waits for them."""
        answer, _ = self._begin(event, payload, trace or Trace())
        return await asyncio.shield(answer)

    async def settled(self) -> None:
        """Every step begun has ended, its work after the answer included (tests, closing)."""
        while pending := [*self._steps, *(lane.worker for lane in self._lanes.values()
                                         if lane.worker is not None)]:  # fmt: skip
            await asyncio.gather(*pending, return_exceptions=True)

    def _begin(self, event: str, payload: dict[str, Any], trace: Trace
               ) -> tuple[asyncio.Future[dict[str, Any] | None], asyncio.Future[None]]:  # fmt: skip
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[dict[str, Any] | None] = loop.create_future()
        done: asyncio.Future[None] = loop.create_future()
        if event in PER_CALL:
            name = payload.get("tool_name")
            if not isinstance(name, str) or name.startswith(OWN_TOOLS):
                answer.set_result(None)
                done.set_result(None)
                self._traced(trace)
                return answer, done
        try:
            sid, root = session_id_of(payload), tree_root(payload)
        except HookError as exc:
            answer.set_exception(exc)
            done.set_result(None)
            return answer, done
        if not payload.get("agent_id") and not event.startswith("_"):
            if event == "SessionEnd":
                self.open_sessions.discard(sid)
            else:
                self.open_sessions.add(sid)
        step = asyncio.create_task(self._step(root, sid, event, payload, trace, answer, done))
        self._steps.add(step)
        step.add_done_callback(self._steps.discard)
        return answer, done

    async def _step(self, root: str, sid: str, event: str, payload: dict[str, Any],
                    trace: Trace, answer: asyncio.Future[dict[str, Any] | None],
                    done: asyncio.Future[None]) -> None:  # fmt: skip
        """What comes before a tool call's answer, in its session tree's lane: its lock (and the
        tree's flock, unless the lane holds it already), the session up to date, the rules;
        then the rest is queued on the lane. Any other event is queued whole. One lane per tree
        (the session and its sub-agents), since they draw their ids from one counter and the
        MCP server's recall writes under the tree's lock (`tree_root`)."""
        lane = self._lanes.setdefault(root, _Lane())
        queued = False
        try:
            async with lane.compute:
                busy = lane.worker is not None
                if not busy:  # the lane takes the tree's lock until its work is done
                    await lane.take(self.store, root)
                    lane.worker = asyncio.create_task(self._run(lane, root))
                trace.lap("lock")
                if event not in PER_CALL:
                    lane.work.append(functools.partial(self._whole, lane, root, sid, event,
                                                       payload, trace, answer,
                                                       done))  # fmt: skip
                    lane.barrier = done
                    queued = True
                    return
                if lane.barrier is not None and not lane.barrier.done():
                    # Another event before this call (SessionStart, UserPromptSubmit, PreCompact,
                    # Stop, SubagentStop, SessionEnd) is done first (Claude Code waits for those
                    # anyway): a compaction counts here.
                    await asyncio.shield(lane.barrier)
                try:
                    # What another process wrote in this session is taken in unless the lane
                    # has served it since it took the tree's lock (the lock may have been taken
                    # for another session of the tree).
                    served = await self._serve(sid, payload, others=sid not in lane.sessions)
                except BaseException:
                    self.served.pop(sid, None)
                    raise
                lane.sessions.add(sid)
                trace.lap("catch_up")
                held, out = await self._rules(served, event, payload, trace)
                _settle(answer, out)
                trace.skip()
                lane.work.append(functools.partial(self._after, sid, served, payload, trace,
                                                   held, done))  # fmt: skip
                queued = True
        except BaseException as exc:
            _fail(answer, exc)
            if not done.done():
                done.set_result(None)
            self._traced(trace)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if not queued and not done.done():
                done.set_result(None)

    async def _run(self, lane: _Lane, root: str) -> None:
        """The lane's worker: its work in order, then the tree's lock given back (under the
        lane's compute lock, so a step never finds the lane busy and its worker gone)."""
        while True:
            while lane.work:
                piece = lane.work.popleft()
                try:
                    await piece()  # each piece records its own failures
                except Exception as exc:  # a bug: recorded, and the lane goes on
                    from ctxview.agents import failures

                    failures.record(self.store, "engine", f"{type(exc).__name__}: {exc}",
                                    {"session_id": root.removeprefix("cc-")})  # fmt: skip
            async with lane.compute:
                if lane.work:
                    continue
                sessions, lane.sessions = lane.sessions, set()
                try:
                    for sid in sessions:  # what the lane wrote is not another writer's
                        served = self.served.get(sid)
                        if served is not None:
                            served.last_seq = self._last_seq(sid)
                    if not self._held and all(other.worker is None or other is lane
                                              for other in self._lanes.values()):  # fmt: skip
                        self._journal.clear()
                except SqliteError:
                    for sid in sessions:
                        self.served.pop(sid, None)
                finally:
                    lane.worker = None
                    await lane.give_back()
                return

    async def _rules(self, served: Served, event: str, payload: dict[str, Any], trace: Trace
                     ) -> tuple[_Held, dict[str, Any] | None]:  # fmt: skip
        """A tool call's answer, from the session in memory, its events held; the ids it gives
        made durable (in the tree's counter, in the store) before it goes. A step that fails
        before its answer gives its ids back and the session is read again from the store."""
        assert self.writer is not None
        session = served.session
        held = _Held(self.writer)
        session.writer = held  # type: ignore[assignment]
        try:
            try:
                out = await self._event(served, event, payload)
            finally:
                session.writer = self.writer
            trace.lap("rules")
            if not held.steps:
                return held, out
            if session.next_rid > served.reserved:
                # An id the model is given is never given again: the store's counter is past
                # it before the answer goes.
                await self._reserve(served, session.next_rid)
            call = payload.get("tool_use_id")
            main = _transcript_of(served, payload)
            if isinstance(call, str) and call and main is not None and is_regular(main):
                held.key = (session.id, call)  # the import puts them after the call's record
                self._held[held.key] = held
            self._journal.add(held.key, held.steps)  # should this engine be killed before
        except BaseException:
            if held.key is not None:
                self._held.pop(held.key, None)
            self._forget(served, owner=held)
            raise
        trace.lap("reserve")
        return held, out

    def _forget(self, served: Served, owner: object) -> None:
        """After a step that did not commit: the ids it took in memory go back to the tree's
        counter (`IdSpace.rewind`: only those no one else took after them; the store's counter
        holds every id an answer gave), and the next step reads the session from the store
        (its dedupe table may hold what was never stored)."""
        self.served.pop(served.session.id, None)
        with contextlib.suppress(SqliteError):
            served.session.ids.rewind(self._next_rid(served.session.id), owner=owner)

    async def _after(self, sid: str, served: Served, payload: dict[str, Any], trace: Trace,
                     held: _Held, done: asyncio.Future[None]) -> None:  # fmt: skip
        """After a tool call's answer: the transcript up to the call's own record (the message
        that made it), the call's events, then the rest of the transcript. A sub-agent run in
        the foreground whose result this call is has handed back: its session ends."""
        trace.skip()  # the wait in the lane is not this step's
        try:
            await self._transcript(served, payload, growing=True, trace=trace, held=held)
            handed = _handed_back(payload)
            if handed is not None:
                await self._end(f"cc-{handed}")
        except Exception as exc:  # the model has the answer: recorded, not raised
            with contextlib.suppress(Exception):  # its events still go in, after what is there
                await self._commit(held, trace)
            if held.key is not None:
                self._held.pop(held.key, None)
            self.served.pop(sid, None)
            self._after_failure(str(payload.get("hook_event_name") or "PostToolUse"), payload,
                                trace, exc)  # fmt: skip
        finally:
            self._traced(trace)
            done.set_result(None)

    async def _whole(self, lane: _Lane, root: str, sid: str, event: str,
                     payload: dict[str, Any], trace: Trace,
                     answer: asyncio.Future[dict[str, Any] | None], done: asyncio.Future[None]
                     ) -> None:  # fmt: skip
        """Another event (SessionStart, UserPromptSubmit, PreCompact, Stop, SubagentStop,
        SessionEnd): answered once done, after every tool call before it has its events
        stored."""
        trace.skip()
        served: Served | None = None
        try:
            if event == "SubagentStop":
                served = await self._agent_stopped(lane, root, sid, payload, trace)
                out = None
            else:
                served = await self._serve(sid, payload, others=sid not in lane.sessions)
                lane.sessions.add(sid)
                trace.lap("catch_up")
                await self._transcript(served, payload, growing=event != "SessionEnd",
                                       trace=trace)  # fmt: skip
                out = await self._event(served, event, payload)
                trace.lap("rules")
            _settle(answer, out)
        except Exception as exc:
            if served is not None:
                assert self.writer is not None
                self._forget(served, owner=self.writer)
            else:
                self.served.pop(root if event == "SubagentStop" else sid, None)
            _fail(answer, exc)
        finally:
            self._traced(trace)
            done.set_result(None)

    async def _agent_stopped(self, lane: _Lane, root: str, sid: str, payload: dict[str, Any],
                             trace: Trace) -> Served:  # fmt: skip
        """SubagentStop: the sub-agent is done (its result goes to its parent): its records up
        to its end are imported (with its parent's transcript), then it ends. One that never
        ran a tool nor wrote a transcript (Claude Code's own helpers) has no session to end."""
        top = _as_root(payload)
        served = await self._serve(root, top, others=root not in lane.sessions)
        lane.sessions.add(root)
        trace.lap("catch_up")
        await self._transcript(served, top, growing=True, trace=trace)
        await self._end(sid)
        return served

    async def _end(self, sid: str) -> None:
        """End a session of the tree (a sub-agent) unless it has ended: its `end` event and its
        end time, as `Session.end` writes them."""
        assert self.writer is not None
        info = await self.writer.session_info(sid)
        if info is None or info["ended"] is not None:
            return
        now = time.time()
        await self.writer.append(sid, [Event(ts=now, kind="end")])
        await self.writer.update_session(sid, ended=now)

    def _after_failure(self, event: str, payload: dict[str, Any], trace: Trace,
                       exc: BaseException) -> None:  # fmt: skip
        from ctxview.agents import failures

        trace.error = f"after the answer: {type(exc).__name__}: {exc}"
        failures.record(self.store, event, trace.error, {
            k: payload[k] for k in ("session_id", "tool_name", "tool_use_id")
            if isinstance(payload.get(k), str)})  # fmt: skip

    def _traced(self, trace: Trace) -> None:
        trace.done()
        if self.on_trace is not None:
            self.on_trace(trace)

    async def _event(self, served: Served, event: str, payload: dict[str, Any]
                     ) -> dict[str, Any] | None:  # fmt: skip
        session = served.session
        if event == "PostToolUse":
            return await self._post_tool_use(session, payload)
        if event == "PostToolUseFailure":
            return await self._failed(session, payload)
        if event == "SessionStart":
            source = str(payload.get("source") or "startup")
            assert self.writer is not None
            await self.writer.update_session(session.id, ended=None)
            if source == "compact":
                return await self._compacted(served, payload)
            await session.message("system", f"Claude Code session {source}; ctxview hooks on.",
                                  data={"subtype": "hook", "hook": "SessionStart",
                                        "source": source})  # fmt: skip
            return None
        if event == "PreCompact":
            served.trigger = str(payload.get("trigger") or "")
            served.compact_from = _size(payload.get("transcript_path"))
            return None
        if event == "SessionEnd":
            await session.end()  # kept in memory: `--resume` brings it back
            # Its sub-agents end with it at the latest (one whose end no hook told).
            assert self._read is not None
            for sid in self._read.members(session.id)[1:]:
                await self._end(sid)
            return None
        if event == "UserPromptSubmit":
            return await self._prompt(session, payload)
        return None  # Stop, and events not wired: nothing to do

    # Sessions

    async def _serve(self, sid: str, payload: dict[str, Any], *, others: bool = True) -> Served:
        """The session, created on first sight, up to date with the store. `others` False: the
        lane has held the tree's lock since it last served this session, so nobody else wrote
        it but an import (which takes no lock): only the id counter is brought up to date."""
        assert self.writer is not None
        served = self.served.get(sid)
        if served is None:
            info = await self.writer.session_info(sid)
            if info is None:
                session = await self._start(sid, payload)
            else:
                # Inside a batch, resume skips replaying the context as sent: a hook never
                # asks for it (Claude Code sends the context), and it is most of a cold start.
                async with self.writer.batch():
                    session = await Session.resume(self.writer, sid)
                await self._take_over(sid, info, payload)
            served = Served(session, self._last_seq(sid))
            self.served[sid] = served
            return served
        if not others:
            self._others_ids(served)
            return served
        last = self._last_seq(sid)
        if last != served.last_seq:  # another writer (recall over MCP, an import) wrote
            self._catch_up(served, last)
        else:  # another session of the tree may have taken ids (a sub-agent, a recall)
            self._others_ids(served)
        if served.summary_due is not None:
            await self._fill_summary(served)
        return served

    async def _take_over(self, sid: str, info: dict[str, Any], payload: dict[str, Any]
                         ) -> None:  # fmt: skip
        """A session in the store before its first hook: an import or `follow` of the
        transcript made it (Claude Code resumed a session from before the hooks, or was followed
        first), or `ctxview mcp` did, naming no transcript. From now on it is hooked, so an
        import (the hook's own, `follow`'s) pairs the results the hook stores with their
        transcript records instead of adding them a second time, and it is the transcript's."""
        assert self.writer is not None
        data = json.loads(info["data"] or "{}")
        fields: dict[str, Any] = {}
        if not data.get("hooked"):
            fields["data"] = json.dumps({**data, "hooked": True}, ensure_ascii=False)
        path = _resolved(payload.get("transcript_path"))
        if not info["source_path"] and path and not payload.get("agent_id"):
            fields["source_path"] = path
        if fields:
            await self.writer.update_session(sid, **fields)

    async def _fill_summary(self, served: Served) -> None:
        """A compaction stored before its summary reached the transcript gets it now."""
        assert served.summary_due is not None and self.writer is not None
        seq, transcript, start = served.summary_due
        summary = _compact_summary(transcript, start)
        if summary:
            await self.writer.set_event_text(served.session.id, seq, summary)
            served.summary_due = None

    async def _start(self, sid: str, payload: dict[str, Any]) -> Session:
        assert self.writer is not None
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else "/"
        parent = call = None
        source_path = _resolved(payload.get("transcript_path"))
        agent = payload.get("agent_id")
        if isinstance(agent, str) and agent:
            parent = f"cc-{payload['session_id']}"
            source_path = _agent_file(source_path, payload["session_id"], agent)
            # The parent's Agent call, when its import has seen the result naming this agent
            # (else the import links the two when it does: `Hub.link_agent`).
            info = await self.writer.session_info(parent)
            if info is not None:
                call = json.loads(info["data"] or "{}").get("agents", {}).get(agent)
        return await Session.start(
            self.writer, cwd, title=Path(cwd).name or "claude code", source=CLAUDE,
            session_id=sid, source_path=source_path,
            source_ref=agent if parent else payload.get("session_id"),
            parent_session=parent, parent_call=call, data=json.dumps({"hooked": True}),
        )  # fmt: skip

    def _last_seq(self, sid: str) -> int:
        assert self._read is not None
        return self._read.last_seq(sid)

    def _catch_up(self, served: Served, last: int) -> None:
        """Take in what others wrote since `served.last_seq` (`Session.catch_up`)."""
        assert self._read is not None
        session = served.session
        session.catch_up(self._read.results_after(session.id, served.last_seq), 0)
        self._others_ids(served)
        served.last_seq = last

    async def _transcript(self, served: Served, payload: dict[str, Any], *, growing: bool,
                          trace: Trace, held: _Held | None = None) -> None:  # fmt: skip
        """Import what the transcript gained since the last hook (what the model said before
        this tool ran, its usage, sub-agents). The importer skips the results this hook stored.
        A tool call's `held` events go in right after the transcript's record of the call (the
        importer puts them there: `has`, `put`), so the message that made the call comes
        before them in the store, as the model went. A failure of the import is recorded and
        the step goes on."""
        main = _transcript_of(served, payload)
        if main is None or not main.exists():  # a sub-agent's hook (its file is imported
            await self._commit(held, trace)  # with its parent's), or no transcript
            return
        if not is_regular(main):
            # A FIFO, a device, a folder: never opened (an open of a FIFO waits for a writer,
            # and this process serves every session of the store). Said once per session.
            if not served.extra.get("odd_transcript"):
                served.extra["odd_transcript"] = True
                from ctxview.agents import failures

                failures.record(self.store, "transcript", f"{main} is not a regular file; "
                                "the transcript is not imported", {"session_id": payload.get(
                                    "session_id")})  # fmt: skip
            await self._commit(held, trace)
            return
        if held is not None and held.key is not None:
            await _written(main, held.key[1])
            trace.lap("written")
        # The import puts the call's events right after its record; when the record did not
        # come in time (or the import failed), they go in after what the transcript holds.
        await self._take_transcript(served, main, payload, growing)
        trace.lap("transcript")
        await self._commit(held, trace)

    # The calls answered whose events wait for their record (the importer's `HeldCalls`)

    def has(self, session_id: str, call_id: str) -> bool:
        return (session_id, call_id) in self._held

    async def put(self, session_id: str, call_id: str) -> None:
        """The importer reached the record of this call: its events go in here, in the
        import's transaction (confirmed, or put again, once the import step has committed)."""
        held = self._held[(session_id, call_id)]
        assert self.writer is not None
        for sid, events, bodies, fts in held.steps:
            await self.writer.append(sid, events, bodies, fts_max_chars=fts)
        held.placed = True

    def _confirm(self) -> None:
        """After an import step: the calls it put are in the store now (or, its transaction
        rolled back, to be put again)."""
        assert self._read is not None
        for key, held in list(self._held.items()):
            if not held.placed:
                continue
            held.placed = False
            if self._stored(held):
                held.steps.clear()
                del self._held[key]

    async def _commit(self, held: _Held | None, trace: Trace) -> None:
        """A call's events stored now, unless an import put them already."""
        if held is None:
            return
        if held.key is not None:
            self._held.pop(held.key, None)
        if not held.steps:
            return
        assert self.writer is not None
        steps, held.steps = held.steps, []
        for sid, events, bodies, fts in steps:
            await self.writer.append(sid, events, bodies, fts_max_chars=fts)
        trace.lap("commit")

    async def _take_transcript(self, served: Served, main: Path, payload: dict[str, Any],
                               growing: bool) -> None:  # fmt: skip
        assert self.writer is not None
        try:
            await self._import(served, main, served.session.id, growing)
            await self._link_agents(served, main)
            for f in sub_agents(main):
                agent = f.stem.removeprefix("agent-")
                sid = f"cc-{agent}"
                # The sub-agent's own hooks write that session too, in this lane, under the
                # tree's lock it holds; the session made here is a hooked one, so its hooked
                # results are skipped.
                if await self.writer.session_info(sid) is None:
                    await self._start(sid, {**payload, "agent_id": agent})
                await self._import(served, f, sid, growing)
            self._others_ids(served)  # the ids the import took (past the hook's own)
        except Exception as exc:  # the transcript is a bonus; the hook goes on
            from ctxview.agents import failures

            failures.record(self.store, "transcript", f"{type(exc).__name__}: {exc}",
                            {"session_id": payload.get("session_id")})  # fmt: skip
            served.importers.clear()
        finally:
            self._confirm()
            self._record_unreached(served)

    def _record_unreached(self, served: Served) -> None:
        """Claude Code's own records (in the transcript just read) of calls its http hooks did
        not get an answer for: the engine was not running, or not reachable. The model got
        Claude Code's own output for those; `ctxview doctor` lists them."""
        from ctxview.agents import failures

        for importer in served.importers.values():
            hub = importer.hub
            if hub is None or not hub.hook_errors:
                continue
            found, hub.hook_errors = hub.hook_errors, []
            for e in found:
                ours = self._port is not None and f"127.0.0.1:{self._port}" in (
                    e["error"] + e["command"])  # fmt: skip
                if not ours:
                    continue  # another hook of the person's
                tool = e["hook"].split(":", 1)[1] if ":" in e["hook"] else ""
                call = e["tool_use_id"] if tool else ""  # else the id of a turn, not a call
                detail = {k: v for k, v in (("session_id", e["session_id"]), ("tool_name", tool),
                                            ("tool_use_id", call)) if v}  # fmt: skip
                failures.record(self.store, e["event"] or "?", f"Claude Code could not reach "
                                f"the hook engine ({e['error']}): the model got Claude Code's "
                                "own output", detail)  # fmt: skip

    async def catch_up_open(self) -> None:
        """At the engine's start: the hooked Claude Code sessions still open whose transcript
        grew since it was last read (the engine was down: killed, crashed) are read now, so
        what the calls meanwhile got is stored and each such call is listed for doctor."""
        assert self._read is not None
        rows = self._read.open_top_sessions(CLAUDE, time.time() - 86400)
        for sid, workspace, source_path, data in rows:
            info = json.loads(data or "{}")
            offset = info.get("import", {}).get("offset", 0)
            if not info.get("hooked") or not sid.startswith("cc-") or (
                    sid not in self._recovered and _size(source_path) <= (
                        offset if isinstance(offset, int) else 0)):  # fmt: skip
                continue
            payload = {"session_id": sid[3:], "transcript_path": source_path, "cwd": workspace}
            with contextlib.suppress(Exception):  # each is recorded by the step itself
                await self.handle("_catch_up", payload)
        # What a killed engine held and no transcript record came for: stored as it is.
        for key in [k for k in self._held if k[0] in self._recovered]:
            lane = self._lanes.get(key[0])
            if lane is None or lane.worker is None:
                with contextlib.suppress(Exception):
                    await self._commit(self._held[key], Trace())
        self._recovered.clear()

    async def _link_agents(self, served: Served, main: Path) -> None:
        """Sub-agents the transcript named (its Agent calls' results) and whose own session a
        hook made meanwhile: linked to their call. The import links one whose session exists
        when it reads the name; one made by its first hook while that import was under way
        (Claude Code runs a sub-agent beside its parent) is linked here."""
        assert self.writer is not None
        importer = served.importers.get(main)
        agents = importer.hub.main.data.get("agents", {}) if importer and importer.hub else {}
        linked = served.extra.setdefault("linked", set())
        for agent, call in agents.items() if isinstance(agents, dict) else ():
            if agent in linked or not isinstance(call, str):
                continue
            info = await self.writer.session_info(f"cc-{agent}")
            if info is None:
                continue  # its first hook will find the link in the parent's data
            if info["parent_call"] != call:
                await self.writer.update_session(f"cc-{agent}", parent_session=served.session.id,
                                                 parent_call=call)  # fmt: skip
            linked.add(agent)

    async def _import(self, served: Served, path: Path, sid: str, growing: bool) -> None:
        assert self.writer is not None
        importer = served.importers.get(path)
        if importer is None:
            importer = served.importers[path] = FileImporter(self.writer, path, held=self)
            importer.commit_seconds = IMPORT_COMMIT_SECONDS
        elif importer.hub is not None:
            # Its engine and the hook's share the tree's id counter, through the store.
            importer.hub.main.session.advance_ids(self._next_rid(sid))
        async with self.writer.batch():
            await importer.step(live=growing)

    async def _reserve(self, served: Served, upto: int) -> None:
        """The tree's ids below `upto` are this engine's, though the events holding them are
        stored later: no writer gives them again, whatever happens to those events (a crash, a
        store gone unwritable). Set in the session's own `next_rid`, which the tree's counter
        is the largest of (`store.tree.next_rid`). Committed at once; while the writer's import
        holds the store's lock (a few milliseconds), tried again as soon as it lets go. (Ids
        reserved ahead instead would leave a gap in the tree's ids whenever the engine is
        killed.)"""
        assert self._ids is not None
        await self._ids.reserve(served.session.id, upto, BUSY_MS / 1000)
        served.reserved = max(served.reserved, upto)

    def _others_ids(self, served: Served) -> None:
        """Ids another writer took (the store's counter past what this engine reserved): the
        next id this one gives is past them."""
        taken = self._next_rid(served.session.id)
        if taken > served.reserved:
            served.session.advance_ids(taken)

    def _next_rid(self, sid: str) -> int:
        """The next id of `sid`'s tree as stored (`store.tree`): reserved ones included."""
        assert self._read is not None
        return self._read.next_rid(sid)

    # Tools

    async def _post_tool_use(self, session: Session, p: dict[str, Any]) -> dict[str, Any] | None:
        name = str(p["tool_name"])
        args = p.get("tool_input") if isinstance(p.get("tool_input"), dict) else {}
        resp = p.get("tool_response")
        ref = p.get("tool_use_id") if isinstance(p.get("tool_use_id"), str) else None
        if name == "Read" and isinstance(resp, dict) and resp.get("type") == "text":
            return _post(await self._read_tool(session, args, resp, ref))
        if name == "Bash" and isinstance(resp, dict) and isinstance(resp.get("stdout"), str):
            if resp.get("isImage"):
                return None
            return _post(await self._bash(session, args, resp, ref))
        if name in _EDITS and isinstance(resp, dict):
            shown = await self._edit(session, name, args, resp, ref)
            if shown is not None:
                return _post(None, shown)
        if name == "NotebookEdit" and isinstance(resp, dict):
            shown = await self._notebook(session, args, resp, ref)
            if shown is not None:
                return _post(None, shown)
        if name in ("Grep", "Glob") and isinstance(resp, dict) and _names(resp.get("filenames")):
            return _post(await self._search(session, name, args, resp, ref))
        if name == "LS" and isinstance(resp, str):  # a listing (LS answered with its text)
            return _post(await session.insert("list", args, resp, call_ref=ref, seen=len(resp),
                                                    shows_at_most=_shows_at_most(name)))
        if name == "WebFetch" and isinstance(resp, dict) and isinstance(resp.get("result"), str):
            text = resp["result"]
            shown = await session.insert(name, args, text, call_ref=ref, seen=len(text),
                                         shows_at_most=_shows_at_most(name))  # fmt: skip
            # Claude Code sends `result` as it is; `citable` would cut it into search-result
            # blocks of its own.
            return _post({**_without(resp, "citable"), "result": shown})
        return await self._generic(session, name, args, resp, ref)

    async def _read_tool(self, session: Session, args: dict[str, Any], resp: dict[str, Any],
                         ref: str | None) -> dict[str, Any]:  # fmt: skip
        file = resp.get("file")
        if not isinstance(file, dict) or not isinstance(file.get("content"), str):
            raise HookError("a Read output without file.content")
        path = str(file.get("filePath") or args.get("file_path") or "")
        key = _key(session, path)
        window = session.config["window.lines"]
        told = read_lines(file, args, window)  # what Claude Code says it read, for the check
        # In a thread: a big file's hash must not hold up the other sessions' hooks.
        sha, real_total = await asyncio.to_thread(_file_facts, session, path, told.first,
                                                  told.lines, told.total)  # fmt: skip
        # The lines the rules show: within the read window, whole, counted as the rules count
        # them (the import replays a transcript's Read through the same function).
        got = read_lines(file, args, window, real_total)
        first, lines, total = got.first, got.lines, got.total
        content = "\n".join(lines)
        start = first - 1
        given: dict[str, Any] = {}

        def claude_form(result: Result) -> str:
            """Claude Code numbers `file.content` from `startLine`: the bracket (or the stub)
            goes in as line `start`, before Claude Code's own lines."""
            if result.rkind == "full" and lines:
                given["content"] = result.shown.split("\n", 1)[0] + "\n" + content
                given["num"] = len(lines) + 1
            else:  # the stub, or an empty file's bracket: one line
                given["content"], given["num"] = result.shown, 1
            return "\n".join(f"{start + i}\t{line}"
                             for i, line in enumerate(given["content"].split("\n")))  # fmt: skip

        await session.insert_read({"path": path, **_without(args, "file_path")}, path, key,
                                  first, lines, total, sha, call_ref=ref,
                                  seen=len(file["content"]), ts=time.time(),
                                  host_form=claude_form)  # fmt: skip
        return {**resp, "file": {**file, "content": given["content"], "numLines": given["num"],
                                 "startLine": start}}  # fmt: skip

    async def _bash(self, session: Session, args: dict[str, Any], resp: dict[str, Any],
                    ref: str | None) -> dict[str, Any]:  # fmt: skip
        command = args.get("command") if isinstance(args.get("command"), str) else ""
        output = resp["stdout"]
        stderr = resp.get("stderr")
        if isinstance(stderr, str) and stderr:
            output = f"{output}\n{stderr}" if output else stderr
        tool = _search_tool(command) or "bash"
        shown = await session.insert(tool, {"command": command}, output, call_ref=ref,
                                     seen=len(output),
                                     shows_at_most=_shows_at_most("Bash"))  # fmt: skip
        return {**resp, "stdout": shown, "stderr": ""}

    async def _edit(self, session: Session, name: str, args: dict[str, Any],
                    resp: dict[str, Any], ref: str | None) -> str | None:  # fmt: skip
        """Edit, MultiEdit, Write: the diff of what Claude Code reports it did (its original
        and its strings, or its patch), never of a file the input names; the file is read only
        when the report lacks the text (`_readable`)."""
        path = resp.get("filePath") or args.get("file_path")
        if not isinstance(path, str) or not path:
            return None
        texts = edited(name, args, resp)
        if texts is None:  # no original in the report (a file too large to include)
            after = await asyncio.to_thread(self._readable, session, path, args, resp)
            before = before_patch(after, resp.get("structuredPatch")) if after else None
            if before is None or after is None:
                return None  # stored as it is, its id beside Claude Code's answer
            texts = (before, after)
        old, new = texts
        return await session.insert_edit(
            _EDITS[name], {"path": path, **_without(args, "file_path")},
            [(path, _key(session, path), old, new)], call_ref=ref,
            seen=len(json.dumps(resp, default=str)),
        )  # fmt: skip

    async def _notebook(self, session: Session, args: dict[str, Any], resp: dict[str, Any],
                        ref: str | None) -> str | None:  # fmt: skip
        """NotebookEdit: Claude Code's answer is built from the cell ("Updated cell … with …"),
        so, as for an edit, the id and the diff of the notebook file go as context: the file
        before and after as Claude Code reports them."""
        path = resp.get("notebook_path") or args.get("notebook_path")
        old, new = resp.get("original_file"), resp.get("updated_file")
        if resp.get("error") or not isinstance(path, str) or not isinstance(old, str):
            return None  # a failed edit: stored, its id beside Claude Code's error
        if not isinstance(new, str):
            new = await asyncio.to_thread(self._readable, session, path, args, resp)
        if new is None:
            return None
        return await session.insert_edit(
            "edit", {"path": path, **_without(args, "notebook_path")},
            [(path, _key(session, path), old, new)], call_ref=ref,
            seen=len(json.dumps(resp, default=str)),
        )  # fmt: skip

    @staticmethod
    def _readable(session: Session, path: str, args: dict[str, Any], resp: dict[str, Any]
                  ) -> str | None:  # fmt: skip
        """The text of a file an edit's report names, when the hook may read it: a regular
        file inside the session's working folder, or the file Claude Code says it just wrote
        (the report's path is the input's); never a FIFO or a device, at most MAX_FILE_BYTES.
        None otherwise. Runs in a thread."""
        data = _project_file(session, path)
        given = args.get("file_path", args.get("notebook_path"))
        if data is None and given == path and os.path.isabs(path):
            with contextlib.suppress(OSError):
                data = read_regular(path, MAX_FILE_BYTES)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    async def _search(self, session: Session, name: str, args: dict[str, Any],
                      resp: dict[str, Any], ref: str | None) -> dict[str, Any]:  # fmt: skip
        """Grep and Glob: the text Claude Code would send is the result of a search (§6: the
        same call with the same result again is the same-result stub, §3: capped), and the
        3.0.0 text goes back in a form Claude Code sends exactly as it is."""
        text = _grep_text(resp) if name == "Grep" else _glob_text(resp)
        shown = await session.insert(_SEARCHES[name], args, text, call_ref=ref, seen=len(text),
                                     shows_at_most=_shows_at_most(name))  # fmt: skip
        if name == "Grep":  # in content mode Grep sends `content` alone
            return {**{k: v for k, v in resp.items() if k not in _GREP_NOTES}, "mode": "content",
                    "content": shown, "numLines": shown.count("\n") + 1}  # fmt: skip
        # Glob sends its file names one a line (and a note when truncated or stopped)
        return {**_without(resp, "timedOut"), "filenames": shown.split("\n"), "truncated": False}

    async def _failed(self, session: Session, p: dict[str, Any]) -> dict[str, Any] | None:
        """A tool that failed (a command's non-zero exit, an edit whose string is not there):
        Claude Code sends the model its error and lets a hook add context only, so the error
        is stored in full and the model gets its id beside it."""
        error = p.get("error")
        if not isinstance(error, str) or p.get("is_interrupt"):
            return None
        name = str(p["tool_name"])
        args = p.get("tool_input") if isinstance(p.get("tool_input"), dict) else {}
        ref = p.get("tool_use_id") if isinstance(p.get("tool_use_id"), str) else None
        return await self._beside(session, _TOOL_NAMES.get(name, name), args, error, ref,
                                  f"the id of this failed {name} call's output")  # fmt: skip

    async def _beside(self, session: Session, tool: str, args: dict[str, Any], text: str,
                      ref: str | None, what: str) -> dict[str, Any]:  # fmt: skip
        """Store `text` in full as a result whose shown text is the one line the model gets
        beside Claude Code's own output: `[#id] is <what>.`"""
        shown = await session.insert_beside(tool, args, text, lambda rid: f"[{rid}] is {what}.",
                                            call_ref=ref, seen=len(text))  # fmt: skip
        return _post(None, shown, event="PostToolUseFailure" if "failed" in what
                     else "PostToolUse")  # fmt: skip

    async def _generic(self, session: Session, name: str, args: dict[str, Any], resp: Any,
                       ref: str | None) -> dict[str, Any] | None:  # fmt: skip
        blocks = resp.get("content") if isinstance(resp, dict) else None
        if isinstance(resp, str):
            text = resp
        elif isinstance(blocks, list) and blocks and all(
            isinstance(b, dict) and b.get("type") == "text" for b in blocks
        ):
            text = "\n".join(str(b.get("text", "")) for b in blocks)
        else:  # a shape whose text we cannot replace: stored, its id given beside it
            # (the model keeps Claude Code's own rendering and gets the id line after it)
            text = json.dumps(resp, ensure_ascii=False, default=str)
            return await self._beside(session, name, args, text, ref,
                                      f"the id of this {name} result")  # fmt: skip
        shown = await session.insert(name, args, text, call_ref=ref, seen=len(text),
                                     shows_at_most=_shows_at_most(name))  # fmt: skip
        if isinstance(resp, str):
            return _post(shown)
        return _post({**resp, "content": [{"type": "text", "text": shown}]})

    async def _prompt(self, session: Session, p: dict[str, Any]) -> dict[str, Any] | None:
        """A prompt that is a background task's `<task-notification>` (Claude Code 2.1.328 runs
        an Agent call in the background by default; its report comes later as a prompt, where
        no PostToolUse sees it): the report is stored under an id, and the model gets the id as
        the prompt's context. Claude Code's own text of it stays (a hook can only add to a
        prompt). Any other prompt: nothing."""
        prompt = p.get("prompt")
        note = task_notification(prompt)
        if note is None or not isinstance(prompt, str):
            return None
        prompt_id = p.get("prompt_id") if isinstance(p.get("prompt_id"), str) else None
        ref = note.ref(prompt_id, prompt)
        assert self._read is not None
        rid = self._read.result_of_call(session.id, ref)
        if rid is not None:  # already stored (an import of the transcript was first)
            shown = note.line(session.ref(rid))
        else:
            shown = await session.insert_beside(NOTIFICATION_TOOL, note.args(), note.report,
                                                note.line, call_ref=ref,
                                                seen=len(prompt))  # fmt: skip
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                       "additionalContext": shown}}  # fmt: skip

    # Compaction

    async def _compacted(self, served: Served, payload: dict[str, Any]) -> dict[str, Any] | None:
        """§7 after Claude Code compacted: the boundary with its summary, the dedupe table
        emptied, and the files-read table to the model after the summary."""
        session = served.session
        reads = session.dedupe.newest_reads(session.config["compaction.rows"])
        table = files_read_table(reads, session.config)
        transcript = payload.get("transcript_path")
        summary = ""
        for _ in range(8):  # Claude Code may still be writing it: a moment, then later
            summary = _compact_summary(transcript, served.compact_from)
            if summary:
                break
            await asyncio.sleep(0.05)
        data = {"source": "hook", "trigger": served.trigger or "", "table": table}
        served.trigger = None
        await session.compact(summary, data=data)
        if not summary and isinstance(transcript, str):
            assert self._read is not None
            seq = self._read.last_compaction(session.id)
            assert seq is not None  # the compaction just stored
            served.summary_due = (seq, transcript, served.compact_from)
        if not table:
            return None
        return {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                       "additionalContext": table}}  # fmt: skip


def _post(updated: Any, context: str | None = None, event: str = "PostToolUse"
          ) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {"hookEventName": event}
    if updated is not None:
        out["updatedToolOutput"] = updated
    if context:
        out["additionalContext"] = context
    return {"hookSpecificOutput": out}


def _key(session: Session, path: str) -> str:
    """A path as the engine compares it: workspace-relative inside the workspace (as its own
    tools and the MCP server's make it), else the real absolute path."""
    try:
        return session.workspace.resolve(path)
    except ToolError:
        return os.path.realpath(path)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


@dataclass
class _Lane:
    """One session tree's steps in this process (the session and its sub-agents: one id
    counter). They are computed one at a time (`compute`); what comes after a tool call's answer
    (the transcript, the call's events) is queued and done in order by the lane's worker, which
    holds the tree's flock (keyed by its root) from the first step until the queue is empty. So
    the next call of the tree is answered while the last one still waits for Claude Code's
    record of it, and no other process writes the tree in between (the MCP server's recall
    waits for that lock)."""

    compute: asyncio.Lock = field(default_factory=asyncio.Lock)
    work: deque[Callable[[], Awaitable[None]]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
    barrier: asyncio.Future[None] | None = None  # the last queued event that is not a call's
    sessions: set[str] = field(default_factory=set)  # the tree's sessions it served meanwhile
    _lock: contextlib.AbstractAsyncContextManager[None] | None = None

    async def take(self, store: Path, root: str) -> None:
        lock = live.session_lock(store, root)
        await lock.__aenter__()
        self._lock = lock

    async def give_back(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            await lock.__aexit__(None, None, None)


def _fail(answer: asyncio.Future[Any], exc: BaseException) -> None:
    if not answer.done():
        answer.set_exception(exc)
        answer.exception()  # retrieved: a caller that gave up waiting is not warned


class _Held:
    """The writer a tool call's session writes through before the answer: its events are kept
    here (in order) and stored after the transcript's record of the call; anything else goes
    to the writer itself."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self.steps: list[tuple[str, list[Event], list[Body], int | None]] = []
        self.key: tuple[str, str] | None = None  # (session, call id) when an import puts them
        self.placed = False  # put by an import whose step has not been confirmed yet

    batching = False  # the session keeps its context state in step, as for a live write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    async def append(self, session_id: str, events: Any, bodies: Any = (), *,
                     fts_max_chars: int | None = None) -> None:  # fmt: skip
        self.steps.append((session_id, list(events), list(bodies), fts_max_chars))

    def rids(self) -> list[tuple[str, int]]:
        return [(sid, e.rid) for sid, events, _, _ in self.steps for e in events
                if e.kind == "result" and e.rid is not None]  # fmt: skip


def _transcript_of(served: Served, payload: dict[str, Any]) -> Path | None:
    """The transcript a hook imports: its session's own (a sub-agent's is its parent's to
    import), when the hook names one (it may not exist, or not be a regular file)."""
    path = payload.get("transcript_path")
    if served.session.id != f"cc-{payload.get('session_id')}" or not isinstance(path, str):
        return None
    return Path(path).expanduser().resolve()


def _settle(answer: asyncio.Future[dict[str, Any] | None], out: dict[str, Any] | None) -> None:
    if not answer.done():  # a caller that gave up waiting cancelled it
        answer.set_result(out)


# Claude Code appends the assistant record that made a call without waiting for the write, so
# a hook can start before the record is in the file (on a loaded machine, half a second after
# the call). The wait runs after the answer (the call does not wait for it), the session's lock
# held: below the 1.5 s a recall over MCP waits for that lock.
_WRITTEN_WAIT = 1.2
_WRITTEN_TAIL = 1 << 18


async def _written(path: Path, call_id: Any) -> int | None:
    """Where the transcript's record of the call this hook is for ends (the byte after its
    line), waiting (briefly, bounded) for it to be written; None when it does not come (or the
    hook names no call), and then the transcript is read as it is."""
    if not isinstance(call_id, str) or not call_id:
        return None
    deadline = time.monotonic() + _WRITTEN_WAIT
    while True:
        try:
            end = _record_end(path, call_id)
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


def _shows_at_most(tool: str) -> int:
    return SHOWS_AT_MOST.get(tool, _SHOWS_AT_MOST_ELSE)


def _plural(n: int, word: str) -> str:
    return word if n == 1 else f"{word}s"


def _pagination(limit: Any, offset: Any) -> str:
    parts = [f"limit: {limit}"] if limit is not None else []
    if offset:
        parts.append(f"offset: {offset}")
    return ", ".join(parts)


def _grep_text(resp: dict[str, Any]) -> str:
    """What Claude Code 2.1.328 sends the model for a Grep output (its
    `mapToolResultToToolResultBlockParam`, mode by mode)."""
    mode = resp.get("mode") or "files_with_matches"
    head = f"{_STOPPED}\n\n" if resp.get("timedOut") else ""
    offset = resp.get("appliedOffset")
    page = _pagination(resp.get("appliedLimit"), offset)
    content = resp.get("content") if isinstance(resp.get("content"), str) else ""
    if mode == "content":
        body = content or ("No entries at this offset" if offset and (
            resp.get("totalLines") or 0) > 0 else "No matches found")  # fmt: skip
        return head + (f"{body}\n\n[Showing results with pagination = {page}]" if page else body)
    if mode == "count":
        matches, files = _whole(resp.get("numMatches"), 0), _whole(resp.get("numFiles"), 0)
        body = content or ("No entries at this offset" if matches > 0 else "No matches found")
        return (f"{head}{body}\n\nFound {matches} total {_plural(matches, 'occurrence')} across "
                f"{files} {_plural(files, 'file')}.{f' with pagination = {page}' if page else ''}")
    files = _whole(resp.get("numFiles"), 0)
    if files == 0:
        if offset and (resp.get("totalFiles") or 0) > 0:
            return f"{head}No entries at this offset. [Showing results with pagination = {page}]"
        return f"{head}No files found"
    names = "\n".join(resp["filenames"])
    return f"{head}Found {files} {_plural(files, 'file')}{f' {page}' if page else ''}\n{names}"


def _glob_text(resp: dict[str, Any]) -> str:
    """What Claude Code 2.1.328 sends the model for a Glob output."""
    head = f"{_STOPPED}\n\n" if resp.get("timedOut") else ""
    names: list[str] = list(resp["filenames"])
    if not names:
        return f"{head}No files found"
    if resp.get("truncated"):
        total = resp.get("totalMatches")
        if not isinstance(total, int):
            names.append("(Results are truncated. Consider using a more specific path or "
                         "pattern.)")  # fmt: skip
        elif resp.get("countIsComplete"):
            names.append(f"(Showing {len(names)} of {total} matching files; "
                         f"{total - len(names)} more are not listed. Narrow the pattern or path "
                         "to see the rest.)")  # fmt: skip
        else:
            names.append(f"(Showing the first {len(names)} files; there are more than {total} "
                         "matches. Narrow the pattern or path to see the rest.)")  # fmt: skip
    return head + "\n".join(names)


def _whole(value: Any, default: int) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else default


def _without(args: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k != key}


def _file_facts(session: Session, path: str, first: int, lines: list[str], total: int
                ) -> tuple[str, int | None]:  # fmt: skip
    """The file's real SHA-256 and number of lines as the rules count them (the hook runs right
    after the read), when the hook may read it: a regular file inside the session's working
    folder, or one that holds exactly the lines Claude Code reports it read there (so nothing
    of a file the model was not shown gets in). Otherwise, or when it cannot be read any more,
    a stand-in hash that changes with the path, the lines shown and the length, and None."""
    data = _project_file(session, path)
    if data is None and os.path.isabs(path):
        with contextlib.suppress(OSError):
            found = read_regular(path, MAX_FILE_BYTES)
            if _holds(found, first, lines):
                data = found
    if data is None:
        shown = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()
        stand_in = f"ctxview-hook\0{path}\0{first}\0{shown}\0{total}"
        return hashlib.sha256(stand_in.encode("utf-8", "surrogatepass")).hexdigest(), None
    count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return hashlib.sha256(data).hexdigest(), count


def _holds(data: bytes, first: int, lines: list[str]) -> bool:
    """Whether the file's lines from `first` are `lines` (a `\r` before `\n` not counted)."""
    text = data.decode("utf-8", "replace").split("\n")
    window = [line.removesuffix("\r") for line in text[first - 1 : first - 1 + len(lines)]]
    return bool(lines) and window == [line.removesuffix("\r") for line in lines]


def _project_file(session: Session, path: str) -> bytes | None:
    """The bytes of `path` when it is a regular file inside the session's working folder (a
    folder of `/` holds nothing: it would hold every file), opened one component at a time
    without following links and never waiting (`tools.safe_fs`), at most MAX_FILE_BYTES; None
    otherwise."""
    ws = session.workspace
    if ws.real == os.sep:
        return None
    try:
        key = ws.resolve(path)
        st = safe_fs.lstat(ws.real, key)
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        return safe_fs.read(ws.real, key)
    except (ToolError, OSError, ValueError):
        return None


def _agent_file(transcript: str | None, session_id: str, agent: str) -> str | None:
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


def _size(path: Any) -> int:
    try:
        return Path(path).stat().st_size if isinstance(path, str) else 0
    except OSError:
        return 0


def _compact_summary(transcript: Any, start: int = 0) -> str:
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
