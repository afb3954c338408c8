"""Claude Code's hooks through the engine: what each hook event does to the store session
`cc-<session_id>`, and the hook output that gives the model the 3.0.0 text.

A `HookEngine` keeps the engine `Session` of each Claude Code session it has served in memory
(it lives in the resident process, `daemon.py`; `served.Sessions` keeps them up to date with
what other writers stored), and runs each step in its session tree's lane (`lane.Lane`: the
session and its sub-agents, one id counter, one lock keyed by the tree's root).

A tool call is answered before it is stored: its answer comes from the rules (`tool_answers`),
its ids reserved in the store and its events held and journaled before the answer
(`held_calls`), and stored after the transcript's record of the call once the answer is out
(`transcript_import`). The per-tool table of what the model gets is in `tool_answers.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxview.agents import failures
from ctxview.agents.claude_code import tool_answers
from ctxview.agents.claude_code.held_calls import Held, HeldCalls
from ctxview.agents.claude_code.lane import Lane
from ctxview.agents.claude_code.payload import (
    BadInput,
    HookError,
    as_root,
    handed_back,
    hook_input,
    session_id_of,
    tree_root,
)
from ctxview.agents.claude_code.served import Served, Sessions
from ctxview.agents.claude_code.tool_answers import SAVED_PAST, SHOWS_AT_MOST
from ctxview.agents.claude_code.transcript_files import absent, compact_summary, size
from ctxview.agents.claude_code.transcript_import import TranscriptImport, transcript_of
from ctxview.agents.hook_journal import Journal
from ctxview.agents.hook_trace import Trace
from ctxview.files.regular import is_regular
from ctxview.importers.detect import CLAUDE
from ctxview.rules.compaction import files_read_table
from ctxview.store.probe import Probe, SqliteError
from ctxview.store.reserve import IdReserver
from ctxview.store.writer import Writer

# The hook input's reading, and the caps the MCP server's instructions name, as they were here.
__all__ = ["SAVED_PAST", "SHOWS_AT_MOST", "BadInput", "HookEngine", "HookError", "Served",
           "hook_input", "session_id_of", "tree_root"]  # fmt: skip

OWN_TOOLS = "mcp__ctxview__"
PER_CALL = ("PostToolUse", "PostToolUseFailure")  # answered before the transcript is read
# A hook's writes give up well inside Claude Code's 2 s budget rather than wait on a lock.
BUSY_MS = 900


class HookEngine:
    """Answers hook events for any number of Claude Code sessions over one store."""

    def __init__(self, store: Path) -> None:
        self.store = Path(store)
        self.writer: Writer | None = None
        self._read: Probe | None = None
        self._ids: IdReserver | None = None
        self.served: dict[str, Served] = {}
        self._lanes: dict[str, Lane] = {}  # session tree (its root's id) -> its lane
        # The Claude Code sessions (not sub-agents) seen and not ended: the engine stays up.
        self.open_sessions: set[str] = set()
        self._journal = Journal(store)  # the held calls, should this engine be killed
        self._steps: set[asyncio.Task[None]] = set()
        self.on_trace: Callable[[Trace], None] | None = None  # each step's trace, when done
        # Its collaborators, made by `open` (they need the writer).
        self._sessions: Sessions
        self._calls: HeldCalls
        self._transcripts: TranscriptImport

    async def open(self) -> None:
        from ctxview.agents.endpoint import load

        found = load(self.store)
        port = found.port if found is not None else None  # where Claude Code's http hooks go
        self.writer = writer = await Writer.open(self.store)
        # The writer waits 10 s for a lock; a hook must give up inside its budget instead.
        await writer.set_busy_timeout(BUSY_MS)
        self._read = Probe.read_write(self.store, timeout=BUSY_MS / 1000)
        # Ids reserved before an answer: a connection of their own that never waits on the lock.
        self._ids = IdReserver(self.store)
        self._sessions = Sessions(writer, self._read, self._ids, BUSY_MS / 1000, self.served)
        self._calls = HeldCalls(writer, self._read, self._journal)
        self._transcripts = TranscriptImport(self.store, writer, self._sessions, self._calls,
                                             port)  # fmt: skip
        await self._calls.recover()

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
        lane = self._lanes.setdefault(root, Lane())
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
                    served = await self._sessions.serve(
                        sid, payload, others=sid not in lane.sessions
                    )
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

    async def _run(self, lane: Lane, root: str) -> None:
        """The lane's worker: its work in order, then the tree's lock given back (under the
        lane's compute lock, so a step never finds the lane busy and its worker gone)."""
        while True:
            while lane.work:
                piece = lane.work.popleft()
                try:
                    await piece()  # each piece records its own failures
                except Exception as exc:  # a bug: recorded, and the lane goes on
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
                            served.last_seq = self._sessions.last_seq(sid)
                    if not self._calls.waiting() and all(other.worker is None or other is lane
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
                     ) -> tuple[Held, dict[str, Any] | None]:  # fmt: skip
        """A tool call's answer, from the session in memory, its events held; the ids it gives
        made durable (in the tree's counter, in the store) before it goes. A step that fails
        before its answer gives its ids back and the session is read again from the store."""
        assert self.writer is not None
        session = served.session
        held = Held(self.writer)
        session.writer = held  # type: ignore[assignment]  # Held stands in for the Writer
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
            main = transcript_of(served, payload)
            if isinstance(call, str) and call and main is not None and (
                    is_regular(main) or (absent(main) and not served.extra.get("no_transcript"))
            ):  # fmt: skip
                # The import puts them after the call's record, once the transcript holds it:
                # also when the file is not there yet, or the prompt would come after them.
                held.key = (session.id, call)
            self._calls.hold(held)  # journaled, should this engine be killed before
        except BaseException:
            self._calls.drop(held)
            self._sessions.forget(served, owner=held)
            raise
        trace.lap("reserve")
        return held, out

    async def _reserve(self, served: Served, upto: int) -> None:
        """The ids below `upto` made durable before the answer gives them (`Sessions.reserve`)."""
        await self._sessions.reserve(served, upto)

    async def _after(self, sid: str, served: Served, payload: dict[str, Any], trace: Trace,
                     held: Held, done: asyncio.Future[None]) -> None:  # fmt: skip
        """After a tool call's answer: the transcript up to the call's own record (the message
        that made it), the call's events, then the rest of the transcript. A sub-agent run in
        the foreground whose result this call is has handed back: its session ends."""
        trace.skip()  # the wait in the lane is not this step's
        try:
            await self._transcripts.follow(served, payload, growing=True, trace=trace, held=held)
            handed = handed_back(payload)
            if handed is not None:
                await self._sessions.end(f"cc-{handed}")
        except Exception as exc:  # the model has the answer: recorded, not raised
            with contextlib.suppress(Exception):  # its events still go in, after what is there
                await self._calls.commit(held, trace)
            self._calls.drop(held)
            self.served.pop(sid, None)
            self._after_failure(str(payload.get("hook_event_name") or "PostToolUse"), payload,
                                trace, exc)  # fmt: skip
        finally:
            self._traced(trace)
            done.set_result(None)

    async def _whole(self, lane: Lane, root: str, sid: str, event: str,
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
                served = await self._sessions.serve(sid, payload, others=sid not in lane.sessions)
                lane.sessions.add(sid)
                trace.lap("catch_up")
                await self._transcripts.follow(served, payload, growing=event != "SessionEnd",
                                       trace=trace)  # fmt: skip
                out = await self._event(served, event, payload)
                trace.lap("rules")
            _settle(answer, out)
        except Exception as exc:
            if served is not None:
                assert self.writer is not None
                self._sessions.forget(served, owner=self.writer)
            else:
                self.served.pop(root if event == "SubagentStop" else sid, None)
            _fail(answer, exc)
        finally:
            self._traced(trace)
            done.set_result(None)

    async def _agent_stopped(self, lane: Lane, root: str, sid: str, payload: dict[str, Any],
                             trace: Trace) -> Served:  # fmt: skip
        """SubagentStop: the sub-agent is done (its result goes to its parent): its records up
        to its end are imported (with its parent's transcript), then it ends. One that never
        ran a tool nor wrote a transcript (Claude Code's own helpers) has no session to end."""
        top = as_root(payload)
        served = await self._sessions.serve(root, top, others=root not in lane.sessions)
        lane.sessions.add(root)
        trace.lap("catch_up")
        await self._transcripts.follow(served, top, growing=True, trace=trace)
        await self._sessions.end(sid)
        return served

    def _after_failure(self, event: str, payload: dict[str, Any], trace: Trace,
                       exc: BaseException) -> None:  # fmt: skip
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
            return await tool_answers.post_tool_use(session, payload)
        if event == "PostToolUseFailure":
            return await tool_answers.failed(session, payload)
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
            served.compact_from = size(payload.get("transcript_path"))
            return None
        if event == "SessionEnd":
            await session.end()  # kept in memory: `--resume` brings it back
            # Its sub-agents end with it at the latest (one whose end no hook told).
            assert self._read is not None
            for sid in self._read.members(session.id)[1:]:
                await self._sessions.end(sid)
            return None
        if event == "UserPromptSubmit":
            assert self._read is not None
            return await tool_answers.prompt(session, payload, self._read)
        return None  # Stop, and events not wired: nothing to do

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
                    sid not in self._calls.recovered and size(source_path) <= (
                        offset if isinstance(offset, int) else 0)):  # fmt: skip
                continue
            payload = {"session_id": sid[3:], "transcript_path": source_path, "cwd": workspace}
            with contextlib.suppress(Exception):  # each is recorded by the step itself
                await self.handle("_catch_up", payload)
        # What a killed engine held and no transcript record came for: stored as it is.
        await self._calls.commit_recovered(
            lambda sid: (lane := self._lanes.get(sid)) is not None and lane.worker is not None
        )

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
            summary = compact_summary(transcript, served.compact_from)
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


def _fail(answer: asyncio.Future[Any], exc: BaseException) -> None:
    if not answer.done():
        answer.set_exception(exc)
        answer.exception()  # retrieved: a caller that gave up waiting is not warned


def _settle(answer: asyncio.Future[dict[str, Any] | None], out: dict[str, Any] | None) -> None:
    if not answer.done():  # a caller that gave up waiting cancelled it
        answer.set_result(out)
