"""Gemini CLI's hooks through the resident engine: what each hook event does to the store
session `gm-<session_id>` (the key `ctxview import` gives Gemini's chat file), and the hook
output that gives the model the 3.0.0 text.

Gemini CLI 0.61's `AfterTool` output cannot set a tool's result: `decision: "deny"` turns it
into an error ("Tool result blocked: ..."), `additionalContext` is only appended. What does
replace it is `hookSpecificOutput.tailToolCallRequest`: the CLI runs the named tool at once and
its result stands in for the original one, under the original call's name and id. The tail call
is ctxview's MCP tool `show` (`show_server.py`), which answers with the text it is given: the
rules' text, which Gemini wraps in `<untrusted_context>` as it does every MCP result.

`recall` is the MCP tool `mcp_ctxview_recall` of the same server, whose own answer only says
the hook did not answer: Gemini's MCP call names no session, but its AfterTool hook input does,
so the hook runs the recall in this session (`gm-<session_id>`) and its text comes back through
the same tail call.

The tool result is sorted as the importer sorts a chat file's (`importers.gemini._how`: a read,
a search, an edit with its old and new content, a command, anything else) and replayed through
the same `Replay`, so a hooked call and an imported one get the same rules.

A step holds the session's lock (`live.session_lock`, which an import waits for) and first
takes in what another writer stored (an import of the chat file, with a call no hook took:
`Session.catch_up`), so ids are never given twice; it writes back only its own keys of the
session's data, never an import's state.

A sub-agent (`invoke_agent`, between its BeforeTool and AfterTool hooks) runs its hooks under
the parent's session id, with a tool registry of its own that has no `show`: its calls and its
requests are left as Gemini made them. The `invoke_agent` call itself is stored, and linked to
the sub-agent its progress names (`_link_agent`), for the import of the sub-agent's chat file.

A compression (`/compress`, or Gemini's own past its threshold) is seen by `BeforeModel` in the
request after it (`compression.py`; a `PreCompress` "manual" before says it was `/compress`):
the boundary is recorded with Gemini's summary, the dedupe table is emptied, and the files-read
table goes after the summary in every request that holds it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxview.agents import live
from ctxview.agents.gemini import compression
from ctxview.engine.session import Session
from ctxview.importers.agent_tools import put_result
from ctxview.importers.formats import GEMINI
from ctxview.importers.gemini import HOOK_REF, _how, agent_of_call, progress_calls
from ctxview.importers.gemini_files import agents_folder
from ctxview.importers.replay import Replay
from ctxview.store.probe import Probe
from ctxview.store.writer import Writer

if TYPE_CHECKING:
    from ctxview.agents.claude_code.hooks import HookEngine
    from ctxview.agents.hook_trace import Trace

PREFIX = "gm-"
SHOW_TOOL = "mcp_ctxview_show"  # the MCP server `ctxview` of show_server.py, its tool `show`
RECALL_TOOL = "mcp_ctxview_recall"  # its tool `recall`, answered here
RECALL_ARGS = ("id", "offset", "limit")
AGENT_TOOL = "invoke_agent"  # Gemini's one tool that runs a sub-agent (codebase_investigator, ...)
TASK_DONE_TOOL = "complete_task"  # a sub-agent's last call, its report
COMPRESSED = "compressed"  # the session data's key: the summary's message and its table
OWN_KEYS = ("hooked", "host", "replay", COMPRESSED)  # the session data this engine writes
AGENTS = "agents"  # the session data's sub-agent -> call map, shared with the import (merged)
LOCK_WAIT = 1.5  # seconds for the session's lock: under the hook client's 2 s
AGENT_FILE_MAX = 64 << 20  # bytes of a sub-agent's chat file searched for its call
SEEN = 16  # the digests of a session's summaries kept: each one is recorded once


class GeminiEngine:
    """Answers Gemini CLI hook events for any number of its sessions over one store."""

    def __init__(self, hook: HookEngine) -> None:
        self.hook = hook
        self.store = Path(hook.store)
        self.writer: Writer | None = None
        self.replays: dict[str, Replay] = {}
        self.manual: set[str] = set()  # sessions whose /compress ran since their last request
        self.agents: dict[str, int] = {}  # session -> its sub-agents running now
        self.probe: Probe | None = None
        self.seen_seq: dict[str, int] = {}  # session -> its newest event seq after this engine
        self.locks: dict[str, asyncio.Lock] = {}

    async def close(self) -> None:
        if self.writer is not None:
            await self.writer.close()
            self.writer = None
        if self.probe is not None:
            self.probe.close()
            self.probe = None

    async def respond(self, _event: str, payload: dict[str, Any], trace: Trace
                      ) -> dict[str, Any] | None:  # fmt: skip
        """`_event` is the hook client's name for them all (`gemini`); Gemini's own is in the
        payload."""
        try:
            return await self._respond(payload, trace)
        finally:
            trace.done()  # in <store>.hook-trace.jsonl beside Claude Code's (the bench reads it)
            if self.hook.on_trace is not None:
                self.hook.on_trace(trace)

    async def _respond(self, payload: dict[str, Any], trace: Trace) -> dict[str, Any] | None:
        event = payload.get("hook_event_name")
        trace.event, trace.tool = f"gemini.{event}", str(payload.get("tool_name") or "")
        sid = payload.get("session_id")
        if not isinstance(sid, str) or not sid:
            raise ValueError("the Gemini CLI hook input has no session_id")
        name = payload.get("tool_name")
        if name == AGENT_TOOL:  # a sub-agent starts (BeforeTool) or has ended (AfterTool)
            running = self.agents.get(sid, 0) + (1 if event == "BeforeTool" else -1)
            self.agents[sid] = max(0, running)
        elif event in ("AfterTool", "BeforeModel") and self.agents.get(sid):
            # A sub-agent's call: its hooks name the parent's session, and its tools are its own
            # (the codebase investigator's four), without ctxview's `show`, so a tail call would
            # turn its result into "Tool not found". Gemini's own output goes through, stored
            # by no one (an import of the chat file takes any call of the parent's own in it).
            # Its model requests too (the parent's next one waits for all its calls to end): a
            # summary in one is the sub-agent's own compression, not the parent's.
            return None
        if event in ("AfterTool", "BeforeModel"):
            key = PREFIX + sid
            async with self.locks.setdefault(key, asyncio.Lock()), live.session_lock(
                    self.store, key, timeout=LOCK_WAIT):  # fmt: skip
                trace.lap("lock")
                try:
                    if event == "AfterTool":
                        return await self._after_tool(sid, payload)
                    return await self._before_model(sid, payload)
                except BaseException:
                    self.replays.pop(key, None)  # read from the store again next time
                    raise
                finally:
                    if self.probe is not None:
                        self.seen_seq[key] = self.probe.last_seq(key)
        if event == "PreCompress":
            # Installed for "manual" only (0.61 fires "auto" before every turn, compressing or
            # not): BeforeModel sees either; this says which one it was.
            if payload.get("trigger") == "manual":
                self.manual.add(sid)
            return None
        return None

    async def _after_tool(self, sid: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        name = payload.get("tool_name")
        if not isinstance(name, str) or name == SHOW_TOOL:
            return None  # the tail call itself
        # A /compress that did not compress: the request before this call held no new summary.
        self.manual.discard(sid)
        args = payload.get("tool_input")
        args = args if isinstance(args, dict) else {}
        response = payload.get("tool_response")
        response = response if isinstance(response, dict) else {}
        text = _content_text(response.get("llmContent"))
        ok = not response.get("error")
        replay = await self._replay(sid, payload)
        # The hook input names no call: the stored call's ref rides in the tail call's args,
        # which Gemini writes into the chat file's record of the call (its `description`), so
        # an import of that file knows the call it already holds (importers/gemini.py).
        ref = f"{HOOK_REF}{uuid.uuid4().hex[:16]}"
        if name == RECALL_TOOL:
            shown = await replay.session.run(
                "recall", {k: args[k] for k in RECALL_ARGS if args.get(k) is not None},
                call_ref=ref)  # fmt: skip
        else:
            how = _how(name, args, text, response.get("returnDisplay"), ok)
            shown = await put_result(replay, how, args, text, call_ref=ref, seen=len(text),
                                     ts=time.time())  # fmt: skip
        if name == AGENT_TOOL:
            await self._link_agent(sid, replay, payload, response.get("returnDisplay"), ref)
        await self._save(replay)
        return {"hookSpecificOutput": {"hookEventName": "AfterTool", "tailToolCallRequest": {
            "name": SHOW_TOOL, "args": {"text": shown, "ref": ref}}}}  # fmt: skip

    async def _link_agent(self, sid: str, replay: Replay, payload: dict[str, Any], display: Any,
                          ref: str) -> None:  # fmt: skip
        """The sub-agent this invoke_agent call ran, linked to the call as stored here. Gemini's
        record of the call in the chat file names it (`agentId`) only until the tail call
        replaces its response, and the hook input never does; its progress (the result's
        display) lists the sub-agent's own call ids, which name it or are in its chat file.
        Two sub-agents of one turn each have their own calls, so each finds its own call. An
        import of the sub-agent's file after this finds the call in the session's `agents`."""
        calls = progress_calls(display)
        agent = next((a for a in map(agent_of_call, calls) if a), None)
        if agent is None and calls:  # the model gave its calls ids of its own
            linked = replay.data.get(AGENTS)
            agent = await asyncio.to_thread(_agent_file, payload.get("transcript_path"), sid,
                                            calls, set(linked) if isinstance(linked, dict) else
                                            set())  # fmt: skip
        if agent is None or PREFIX + agent == replay.id:
            return
        child = PREFIX + agent
        replay.data.setdefault(AGENTS, {})[agent] = ref
        assert self.writer is not None
        info = await self.writer.session_info(child)
        if info is not None and info["parent_call"] != ref:  # its file was imported first
            await self.writer.update_session(child, parent_session=replay.id, parent_call=ref)

    async def _before_model(self, sid: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        now = compression.messages_of(payload.get("llm_request"))
        trigger = "manual" if sid in self.manual else "auto"
        at = compression.summary_at(now)
        if at is None:
            return None  # no summary: nothing to record, no table to give
        replay = await self._replay(sid, payload)
        held = replay.data.get(COMPRESSED)
        held = held if isinstance(held, dict) else {}
        seen = [str(d) for d in held.get("seen", [held.get("message")]) if d]
        message = compression.digest(now[at][1])
        if message not in seen:  # a summary not recorded before: this is the compression
            self.manual.discard(sid)
            summary = compression.summary_in(now[at][1])
            text = await replay.session.compact(summary, ts=time.time(),
                                                data={"trigger": trigger})  # fmt: skip
            table = text.removeprefix(summary).strip()
            held = replay.data[COMPRESSED] = {"message": message, "table": table,
                                              "seen": [*seen, message][-SEEN:]}  # fmt: skip
            await self._save(replay)
        if not held.get("table"):
            return None
        messages = compression.with_table(now, str(held.get("message")), str(held["table"]))
        if messages is None:
            return None
        return {"hookSpecificOutput": {"hookEventName": "BeforeModel",
                                       "llm_request": {"messages": messages}}}  # fmt: skip

    async def _replay(self, sid: str, payload: dict[str, Any]) -> Replay:
        key = PREFIX + sid
        if self.writer is None:
            self.writer = await Writer.open(self.store)
        if self.probe is None:
            self.probe = Probe.read_write(self.store, timeout=LOCK_WAIT)
        probe = self.probe
        found = self.replays.get(key)
        if found is not None:
            seen = self.seen_seq.get(key, 0)
            if probe.last_seq(key) != seen:  # another writer stored since this engine did
                found.session.catch_up(probe.results_after(key, seen), probe.next_rid(key))
            return found
        writer = self.writer
        cwd = str(payload.get("cwd") or "/")
        info = await writer.session_info(key)
        if info is None:
            data: dict[str, Any] = {"hooked": True, "host": "gemini"}
            session = await Session.start(
                writer, cwd, source=GEMINI, session_id=key, started=time.time(),
                source_path=str(payload.get("transcript_path") or ""), source_ref=sid,
                data=json.dumps(data),
            )  # fmt: skip
        else:
            # A session an import or a follow made before this first hook (a follow started
            # with Gemini, or a resume of an imported session) is the hooked one from now on:
            # the follow passes over the calls stored here rather than storing each again.
            data = {**json.loads(info["data"] or "{}"), "hooked": True, "host": "gemini"}
            session = await Session.resume(writer, key)
        replay = self.replays[key] = Replay(session, cwd, data, live=True)
        return replay

    async def _save(self, replay: Replay) -> None:
        """The engine's keys of the session's data, over what is stored (an import's state)."""
        assert self.writer is not None
        info = await self.writer.session_info(replay.id)
        data = json.loads(info["data"] or "{}") if info is not None else {}
        data.update({k: replay.data[k] for k in OWN_KEYS if k in replay.data})
        if isinstance(replay.data.get(AGENTS), dict):  # with an import's, which it may have
            stored = data.get(AGENTS)
            data[AGENTS] = {**(stored if isinstance(stored, dict) else {}), **replay.data[AGENTS]}
        await self.writer.update_session(replay.id, data=json.dumps(data, ensure_ascii=False))


def _agent_file(transcript: Any, sid: str, calls: list[str], linked: set[str]) -> str | None:
    """The one sub-agent not yet linked whose chat file (`chats/<session id>/<agent id>.jsonl`
    beside the parent's, names sanitized as ChatRecordingService does) holds all the calls (a
    model's ids may repeat between two sub-agents: none rather than the wrong one)."""
    if not isinstance(transcript, str) or not transcript:
        return None
    folder = agents_folder(Path(transcript), sid)
    needles = [json.dumps(c, ensure_ascii=False).encode() for c in calls]  # as JSON.stringify
    try:
        files = sorted(folder.glob("*.jsonl"))
    except OSError:
        return None
    found = []
    for f in files:
        if f.stem in linked:
            continue
        try:
            if f.stat().st_size <= AGENT_FILE_MAX:
                text = f.read_bytes()
                if all(n in text for n in needles):
                    found.append(f.stem)
        except OSError:
            continue
    return found[0] if len(found) == 1 else None


def _content_text(content: Any) -> str:
    """The text of a tool's `llmContent`: a string, a Part, or a list of them."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return "\n".join(p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str)
                         else (p if isinstance(p, str) else json.dumps(p)) for p in content)  # fmt: skip
    return "" if content is None else json.dumps(content)
