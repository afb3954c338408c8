"""GitHub Copilot CLI `events.jsonl` (`~/.copilot/session-state/<sessionId>/events.jsonl`,
FORMATS.md 7) into a ctxview session `cp-<sessionId>`. Import only: Copilot's hooks see a
result but cannot replace it, so the rules here are a replay, not what the model saw.

File order is the order. `user.message` is the prompt (its `content`, what the person typed;
Copilot sends `transformedContent`, with the date and reminders added); `assistant.message` a
model response (text, reasoning, `toolRequests`, its `outputTokens`), whose request's usage is
the `session.usage_record` before it with the same `apiCallId` (1.0.102: `inputTokens` holds the
cached `cacheReadTokens`, as OpenAI counts, measured against a scripted provider; older files
have only `outputTokens`); `tool.execution_complete` a result (`result.content` is what the model got).
A sub-agent's events (`task` calls) carry `agentId`: the task call's id in 1.0.55, its own id
in 1.0.102, where its `subagent.started` pairs the two; they go to a child session
`cp-<task call id>` linked to that call. `session.truncation` (Copilot trimmed the context)
and `session.compaction_complete` are compactions, except a completion that says `success: false`
(1.0.102 cancels one that a truncation made needless: measured, under load).

Tools: `view {path, view_range}` is a read: Copilot numbers its lines `N. text` for some models
(1.0.55 with Claude) and gives them plain for others (1.0.102 with an OpenAI-compatible
provider), where its `toolTelemetry` says `viewType: file` (a folder's listing is not lines); `grep`/`rg`, `glob`, are grep and glob; `create {path, file_text}` an
edit of a new file; `edit`/`str_replace`/`write` change their path; `bash`/`shell`/`powershell`
are bash; the rest (report_intent, task, ...) is capped.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ctxview.importers.agent_tools import (
    Edit,
    How,
    Other,
    Search,
    SimpleParser,
    numbered,
    path_arg,
    positive,
    put_result,
    text_lines,
)
from ctxview.importers.agent_tools import Read as ReadHow
from ctxview.importers.common import block_text, check_time, id_text, need, path_text, when
from ctxview.importers.replay import Replay

if TYPE_CHECKING:
    from ctxview.importers.hub import Hub

_SEARCH = {"grep": "grep", "rg": "grep", "glob": "glob"}
_CHANGES = ("edit", "str_replace", "str_replace_editor", "write", "create", "apply_patch")
_SHELLS = ("bash", "shell", "powershell")
_NUMBERED = re.compile(r"^(\d+)\. ?(.*)$")
_QUIET = frozenset({
    "session.start", "session.model_change", "system.message", "assistant.turn_start",
    "assistant.turn_end", "tool.execution_start", "tool.execution_partial_result", "hook.start",
    "hook.end", "session.usage_checkpoint", "session.auto_mode_resolved", "session.shutdown",
    "assistant.reasoning", "assistant.intent", "session.compaction_start", "skill.invoked",
})  # fmt: skip


class CopilotParser(SimpleParser):
    def __init__(self, hub: Hub, state: dict[str, Any]) -> None:
        self.hub = hub
        self._pending: dict[str, dict[str, Any]] = state.get("pending", {})
        self._model: str | None = state.get("model")
        # apiCallId -> the usage of that request (its usage record comes before its message)
        self._usage: dict[str, dict[str, int]] = state.get("usage", {})
        self._agents: dict[str, str] = state.get("agents", {})  # agentId -> its task call's id
        self.quiet: dict[str, int] = {}

    def state(self) -> dict[str, Any]:
        return {"pending": self._pending, "model": self._model, "usage": self._usage,
                "agents": self._agents}  # fmt: skip

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the record")
        kind = need(rec.get("type"), str, "type")
        data = need(rec.get("data", {}), dict, "data")
        check_time(rec.get("timestamp"))
        ts = when(rec.get("timestamp"), self.hub.last_ts)
        self.hub.last_ts = ts
        if kind == "session.model_change":
            self._model = id_text(data.get("newModel")) or self._model
        if kind == "subagent.started":
            call = id_text(data.get("toolCallId"))
            agent = id_text(rec.get("agentId"))
            if call and agent:
                self._agents[agent] = call
            if call:
                title = str(data.get("agentDisplayName") or data.get("agentName") or "sub-agent")
                await self.hub.child(f"cp-{call}", title=title, parent_call=call, started=ts,
                                     source_ref=call)  # fmt: skip
            return
        if kind == "subagent.completed" or kind == "subagent.failed":
            call = id_text(data.get("toolCallId"))
            if call:
                await self.hub.release(f"cp-{call}")
            return
        if kind in _QUIET:
            self.skip(kind)
            return
        if kind == "session.usage_record":
            self._usage_record(data)
            return
        replay = await self._session_of(rec, data, ts)
        if kind == "user.message":
            content = data.get("content")
            extra = {"attachments": len(data["attachments"])} if isinstance(
                data.get("attachments"), list) and data["attachments"] else None  # fmt: skip
            await replay.message("user", content if isinstance(content, str) else "", ts=ts,
                                 data=extra)  # fmt: skip
        elif kind == "assistant.message":
            await self._assistant(replay, data, ts)
        elif kind == "tool.execution_complete":
            await self._result(replay, data, ts)
        elif kind == "session.compaction_complete" and data.get("success") is False:
            # A compaction Copilot cancelled or failed changed nothing the model sees: not a
            # boundary (one would empty the dedupe table), only a note of what happened.
            why = data.get("error") or data.get("outcome") or "failed"
            await replay.message("system", f"Copilot's compaction did not happen: {why}", ts=ts,
                                 data={"subtype": kind})  # fmt: skip
        elif kind in ("session.truncation", "session.compaction_complete"):
            summary = data.get("summary") or data.get("summaryContent")
            info = {k: v for k, v in data.items() if isinstance(v, int | float | str)
                    and not isinstance(v, bool) and k not in ("summary", "summaryContent")}  # fmt: skip
            await replay.compact(summary if isinstance(summary, str) else "", ts=ts,
                                 data={"source": kind, **info})  # fmt: skip
        elif kind in ("session.info", "session.error", "session.warning", "system.notification",
                      "abort", "session.resume"):  # fmt: skip
            text = data.get("message") or data.get("content") or data.get("reason") or kind
            await replay.message("system", str(text), ts=ts, data={"subtype": kind})
        else:
            self.skip(kind)  # Copilot adds event types often; none of them is a message

    async def _session_of(self, rec: dict[str, Any], data: dict[str, Any], ts: float) -> Replay:
        agent = id_text(rec.get("agentId")) or id_text(data.get("parentToolCallId"))
        if agent is None:
            return self.hub.main
        agent = self._agents.get(agent, agent)
        return await self.hub.child(f"cp-{agent}", title="sub-agent", parent_call=agent,
                                    started=ts, source_ref=agent)  # fmt: skip

    async def _assistant(self, replay: Replay, data: dict[str, Any], ts: float) -> None:
        extra: dict[str, Any] = {}
        model = id_text(data.get("model")) or self._model
        if model:
            extra["model"] = model
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
            extra["thinking"] = data["reasoningText"]
        out = data.get("outputTokens")
        usage = self._usage.pop(str(data.get("apiCallId")), None)
        if usage is not None:
            extra["usage"] = usage
        elif isinstance(out, int) and not isinstance(out, bool) and out > 0:
            extra["usage"] = {"input_tokens": 0, "output_tokens": out, "cache_read_tokens": 0,
                              "cache_write_tokens": 0}  # fmt: skip
        for req in data.get("toolRequests") or []:
            if not isinstance(req, dict) or not id_text(req.get("toolCallId")):
                continue
            args = req.get("arguments")
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except (ValueError, RecursionError):
                    args = {"arguments": args}
            self._pending[req["toolCallId"]] = {
                "name": str(req.get("name") or "tool"),
                "input": args if isinstance(args, dict) else {"arguments": args}}  # fmt: skip
        content = data.get("content")
        await replay.message("assistant", content if isinstance(content, str) else "", ts=ts,
                             data=extra)  # fmt: skip

    def _usage_record(self, data: dict[str, Any]) -> None:
        usage = data.get("usage")
        call = id_text(usage.get("apiCallId")) if isinstance(usage, dict) else None
        if not isinstance(usage, dict) or call is None:
            self.skip("session.usage_record")
            return

        def count(key: str) -> int:
            value = usage.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        cached = count("cacheReadTokens")
        self._usage[call] = {  # normalised to Claude's additive counting
            "input_tokens": max(0, count("inputTokens") - cached),
            "output_tokens": count("outputTokens"), "cache_read_tokens": cached,
            "cache_write_tokens": count("cacheWriteTokens")}  # fmt: skip
        if len(self._usage) > 64:  # one whose message never came: not kept for ever
            self._usage.pop(next(iter(self._usage)))

    async def _result(self, replay: Replay, data: dict[str, Any], ts: float) -> None:
        call_id = need(data.get("toolCallId"), str, "toolCallId")
        call = self._pending.pop(call_id, None) or {"name": "unknown", "input": {}}
        result = data.get("result")
        content = result.get("content") if isinstance(result, dict) else result
        if content is None and isinstance(data.get("error"), dict | str):
            content = data["error"].get("message") if isinstance(data["error"], dict) else \
                data["error"]  # fmt: skip
        text = content if isinstance(content, str) else block_text(content)
        how = _how(call["name"], call["input"], text, data.get("success") is not False,
                   _view_type(data))  # fmt: skip
        await put_result(replay, how, call["input"], text, call_ref=call_id, seen=len(text),
                         ts=ts)  # fmt: skip


def _view_type(data: dict[str, Any]) -> str | None:
    tel = data.get("toolTelemetry")
    props = tel.get("properties") if isinstance(tel, dict) else None
    kind = props.get("viewType") if isinstance(props, dict) else None
    return kind if isinstance(kind, str) else None


def _how(name: str, args: dict[str, Any], text: str, ok: bool, view_type: str | None) -> How:
    path = path_arg(args, "path", "file_path")
    if ok:
        if name == "view" and path:
            found = numbered(text, _NUMBERED)
            if found is not None:
                return ReadHow(path, found[0], found[1], None)
            if view_type == "file":  # its lines as they are, from the range's start
                span = args.get("view_range")
                first = positive(span[0]) if isinstance(span, list) and span else None
                return ReadHow(path, first or 1, text_lines(text), None)
        if name in _SEARCH:
            return Search(_SEARCH[name])
        if name == "create" and path and isinstance(args.get("file_text"), str):
            return Edit(path, None, args["file_text"])
    changes = (path,) if name in _CHANGES and path and ok else ()
    return Other("bash" if name in _SHELLS else name, changes)


def source_ids(rec: Any) -> dict[str, Any] | None:
    """The session id, cwd and start of `session.start` (or `session.resume`)."""
    if not isinstance(rec, dict) or rec.get("type") not in ("session.start", "session.resume"):
        return None
    data = rec.get("data")
    if not isinstance(data, dict) or not id_text(data.get("sessionId")):
        return None
    ctx = data.get("context")
    cwd = path_text(ctx.get("cwd")) if isinstance(ctx, dict) else None
    return {"session": data["sessionId"], "cwd": cwd,
            "ts": data.get("startTime") or rec.get("timestamp"),
            "version": data.get("copilotVersion")}  # fmt: skip
