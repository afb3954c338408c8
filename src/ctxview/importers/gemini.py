"""Gemini CLI chat files (FORMATS.md 5) into a ctxview session `gm-<sessionId>`: the JSON
document of `~/.gemini/tmp/<project hash>/chats/session-*.json` (read whole by
importers/documents.py, which feeds its messages here) and the newer JSONL file (a header line,
one message per line, `{"$set": ...}` patches; a message is written again when its tool calls
finish: the last copy wins, each call is replayed once, when it has its result). A compression
is a `$set` of the whole history: a user message holding Gemini's summary answered by its fixed
`COMPRESSED_ACK`; it is a compaction with that summary (a hooked session's hooks record their
own, `agents/gemini/compression.py`).

A `gemini` message is the model's turn: its text, its thoughts (summaries), its tokens (`cached`
is inside `input`, normalised to Claude's additive counting) and its tool calls, whose results
are inline. `info`, `error` and `warning` messages are the CLI's notices. An `invoke_agent`
call's record names the sub-agent it ran (`agentId`), whose own file
`chats/<session>/<agentId>.jsonl` is the child session `gm-<agentId>`, linked to that call
(`Hub.link_agent`).

Tools: `read_file {file_path|absolute_path, offset (0-based), limit}` is a read (Gemini's note
"Showing lines a-b of T total lines" gives the file's length; an output Gemini masked in the
saved file is not lines); `grep_search`/`search_file_content`, `glob`, `list_directory` are
grep, glob and list; `replace`/`write_file`/`edit` with the old and new content in
`resultDisplay` are edits (the diff); `run_shell_command` is bash; the rest is capped.

A session ctxview's hooks wrote (`agents/gemini/engine.py`) already holds its calls: the hook
gave each result back as a tail call of ctxview's `show` with the stored call's ref in its args,
and Gemini writes the tail call's args as the record's `description`; a call whose description
names a ref the session holds is not stored again (`LiveCalls`).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ctxview.importers.agent_tools import (
    Edit,
    How,
    Other,
    Read,
    Search,
    SimpleParser,
    path_arg,
    positive,
    put_result,
    text_lines,
)
from ctxview.importers.common import (
    BadRecord,
    check_ids,
    check_time,
    id_text,
    need,
    path_text,
    when,
)
from ctxview.importers.hub import LiveCalls

if TYPE_CHECKING:
    from ctxview.importers.hub import Hub

_SEARCH = {"grep_search": "grep", "search_file_content": "grep", "grep": "grep", "glob": "glob",
           "list_directory": "list", "ls": "list"}  # fmt: skip
_EDITS = ("replace", "write_file", "edit", "smart_edit")
_SHELL = ("run_shell_command", "shell")
_NOTICES = ("info", "error", "warning")
_STATUS = re.compile(r"Showing lines (\d+)-(\d+) of (\d+) total lines")
_CONTENT = "--- FILE CONTENT (truncated) ---\n"
_AGENT_CALL = re.compile(r"\A(.+)#\d+-\d+\Z", re.S)
_KEEP = 512  # message ids remembered (a message is written again only while its turn runs)
HOOK_REF = "gm-hook:"  # the call_ref of a result ctxview's Gemini hook stored
COMPRESSED_ACK = "Got it. Thanks for the additional context!"  # 0.61's chatCompressionService
SUBAGENT = "subagent"  # a chat file header's kind for a sub-agent's own transcript
AGENT_TOOL = "invoke_agent"  # Gemini's one tool that runs a sub-agent


class GeminiParser(SimpleParser):
    def __init__(self, hub: Hub, state: dict[str, Any]) -> None:
        self.hub = hub
        # message id -> the call ids of it already replayed (None: its text is stored)
        self._msgs: OrderedDict[str, list[str]] = OrderedDict(state.get("msgs", []))
        self.quiet: dict[str, int] = {}
        self._live = LiveCalls(hub)  # what the hooked session stored itself
        self._summaries: list[str] = state.get("summaries", [])  # summaries' message ids taken
        # Reading a file the session goes on in (gemini_files.py) from its start: its messages
        # before the first one remembered are older ones, stored from the file before.
        self._join = bool(state.get("join")) and bool(self._msgs)

    def state(self) -> dict[str, Any]:
        state = {"msgs": list(self._msgs.items()), "summaries": self._summaries[-_KEEP:]}
        if self._join:
            state["join"] = True
        return state

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the record")
        if "$set" in rec or "$rewindTo" in rec:
            if "$rewindTo" in rec:
                await self.hub.main.message("system", f"Rewound to message {rec['$rewindTo']}.",
                                            ts=self.hub.last_ts, data={"subtype": "rewind"})  # fmt: skip
            elif not await self._compressed(rec["$set"]):
                self.skip("$set")
            return
        if "projectHash" in rec and "type" not in rec:
            self.skip("header")
            return
        kind = need(rec.get("type"), str, "type")
        check_ids(rec, ("id",), ())
        check_time(rec.get("timestamp"))
        ts = when(rec.get("timestamp"), self.hub.last_ts)
        self.hub.last_ts = ts
        main = self.hub.main
        mid = id_text(rec.get("id"))
        again = mid is not None and mid in self._msgs
        if self._join:
            if not again:
                self.skip("stored before")
                return
            self._join = False
        if kind == "user":
            content = rec.get("content")
            if _responses_only(content):
                # The calls' results as Gemini sent them back (0.61 records them as a user
                # message): each is its call's result already, no word of the person's.
                self.skip("function responses")
            elif not again:
                prompt = _prompt(content)
                if prompt is not None and "prompt" not in main.data:
                    main.prompted(prompt)  # past the context Gemini puts before it
                await main.message("user", _text(content), ts=ts)
        elif kind == "gemini":
            if not again:
                await main.message("assistant", _text(rec.get("content")), ts=ts,
                                   data=_turn_data(rec))  # fmt: skip
            done = self._msgs.get(mid, []) if mid else []
            calls = rec.get("toolCalls")
            for call in need(calls, list, "toolCalls") if calls is not None else []:
                need(call, dict, "a tool call")
                cid = need(call.get("id"), str, "toolCall.id")
                if cid in done or call.get("status") not in ("success", "error", "cancelled"):
                    continue  # replayed already, or not finished (its next copy will be)
                await self._call(call, ts)
                done.append(cid)
            if mid:
                self._msgs[mid] = done
        elif kind in _NOTICES:
            if not again:
                await main.message("system", _text(rec.get("content")), ts=ts,
                                   data={"subtype": kind})  # fmt: skip
        else:
            raise BadRecord(f"unknown message type {kind!r}")
        if mid and mid not in self._msgs:
            self._msgs[mid] = []
        if mid:
            self._msgs.move_to_end(mid)
            while len(self._msgs) > _KEEP:
                self._msgs.popitem(last=False)

    async def _compressed(self, patch: Any) -> bool:
        """A `$set` of the history that Gemini's compression wrote: its summary is a compaction
        (once: a later `$set` may hold the same summary)."""
        messages = patch.get("messages") if isinstance(patch, dict) else None
        if not isinstance(messages, list):
            return False
        for msg, answer in itertools.pairwise(messages):
            if not (isinstance(msg, dict) and isinstance(answer, dict) and msg.get("type") == "user"
                    and answer.get("type") == "gemini"
                    and _text(answer.get("content")) == COMPRESSED_ACK):  # fmt: skip
                continue
            mid = id_text(msg.get("id")) or ""
            if mid in self._summaries:
                continue
            self._summaries.append(mid)
            if not self.hub.main.data.get("hooked"):
                await self.hub.main.compact(_text(msg.get("content")), ts=self.hub.last_ts,
                                            data={"source": "compression"})  # fmt: skip
            return True
        return False

    async def _call(self, call: dict[str, Any], fallback: float) -> None:
        ref = _hook_ref(call.get("description")) or call["id"]
        stored = await self._live.stored(ref)
        agent = id_text(call.get("agentId"))
        if agent and call.get("name") == AGENT_TOOL:
            # Gemini's record of the call names the sub-agent it ran (0.61's
            # packages/core/src/agents/local-invocation.ts returns `data: {agentId}`, which
            # GeminiChat.recordCompletedToolCalls writes as the record's `agentId`), and the
            # sub-agent's chat file is `chats/<this session>/<agentId>.jsonl`
            # (ChatRecordingService.initialize: the executor's agentId is its sessionId).
            await self.hub.link_agent(agent, ref if stored else call["id"], f"gm-{agent}")
        if stored:
            return
        name = str(call.get("name") or "tool")
        args = call.get("args")
        args = args if isinstance(args, dict) else {"args": args}
        text = _result_text(call.get("result"))
        ts = when(call.get("timestamp"), fallback)
        how = _how(name, args, text, call.get("resultDisplay"), call.get("status") == "success")
        await put_result(self.hub.main, how, args, text, call_ref=call["id"], seen=len(text),
                         ts=ts)  # fmt: skip


def progress_calls(display: Any) -> list[str]:
    """The call ids a sub-agent's progress (the `returnDisplay` of Gemini's `invoke_agent`:
    `isSubagentProgress`, its `recentActivity`) lists: its own calls' ids, as its chat file has
    them (0.61's packages/core/src/agents/local-invocation.ts takes each tool_call activity's id
    from the executor's callId)."""
    if not isinstance(display, dict) or display.get("isSubagentProgress") is not True:
        return []
    activity = display.get("recentActivity")
    return [a["id"] for a in activity if isinstance(a, dict) and a.get("type") == "tool_call"
            and id_text(a.get("id"))] if isinstance(activity, list) else []  # fmt: skip


def agent_of_call(call_id: str) -> str | None:
    """The sub-agent a call id of its own names: Gemini makes it `<agentId>#<turn>-<index>` when
    the model gave the call no id (local-executor.ts: `functionCall.id ?? `${promptId}-${index}``,
    the prompt id `${agentId}#${turn}`)."""
    m = _AGENT_CALL.match(call_id)
    return m.group(1) if m else None


def _hook_ref(description: Any) -> str | None:
    """The ref of the call ctxview's hook stored, in the args of its tail call (the JSON Gemini
    writes as the description of an MCP call)."""
    if not isinstance(description, str) or HOOK_REF not in description:
        return None
    try:
        args = json.loads(description)
    except ValueError:
        return None
    ref = args.get("ref") if isinstance(args, dict) else None
    return ref if isinstance(ref, str) and ref.startswith(HOOK_REF) else None


def _responses_only(content: Any) -> bool:
    """Whether a user message's parts are all function responses (none of them typed)."""
    return isinstance(content, list) and bool(content) and all(
        isinstance(p, dict) and "functionResponse" in p for p in content)  # fmt: skip


_OBJECTIVE = re.compile(r"<objective>\s*(.*?)\s*</objective>", re.S)


def _prompt(content: Any) -> str | None:
    """What names the session: the first text part that is not context Gemini put before the
    prompt (`<loaded_context>…`, a sub-agent's), and of a sub-agent's task (the codebase
    investigator's `<objective>…</objective>`) the objective itself."""
    for part in content if isinstance(content, list) else []:
        text = part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str) and text.strip() and not text.lstrip().startswith("<"):
            objective = _OBJECTIVE.findall(text)
            return objective[0] if len(objective) == 1 and objective[0] else text
    return None


def _text(content: Any) -> str:
    """A message's content: a string, or Gemini's Part list (`[{text}]`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part, dict):
                out.append(f"[{next(iter(part), 'part')}]")
            else:
                out.append(str(part))
        return "\n".join(out)
    return "" if content is None else str(content)


def _turn_data(rec: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if isinstance(rec.get("model"), str):
        data["model"] = rec["model"]
    thoughts = rec.get("thoughts")
    if isinstance(thoughts, list) and thoughts:
        data["thinking"] = "\n\n".join(
            f"{t.get('subject', '')}: {t.get('description', '')}".strip(": ")
            for t in thoughts if isinstance(t, dict))  # fmt: skip
    tokens = rec.get("tokens")
    if isinstance(tokens, dict):

        def n(key: str) -> int:
            v = tokens.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

        usage = {"input_tokens": max(0, n("input") - n("cached")),
                 "output_tokens": n("output") + n("thoughts"),
                 "cache_read_tokens": n("cached"), "cache_write_tokens": 0}  # fmt: skip
        if any(usage.values()):
            data["usage"] = usage
    return data


def _result_text(result: Any) -> str:
    """What the model got: each functionResponse's output (or error), else the JSON."""
    if not isinstance(result, list):
        return "" if result is None else (result if isinstance(result, str) else json.dumps(result))
    out = []
    for part in result:
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        resp = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(resp, dict) and isinstance(resp.get("output"), str):
            out.append(resp["output"])
        elif isinstance(resp, dict) and isinstance(resp.get("error"), str):
            out.append(resp["error"])
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
        else:
            out.append(json.dumps(part, ensure_ascii=False))
    return "\n".join(out)


def _how(name: str, args: dict[str, Any], text: str, display: Any, ok: bool) -> How:
    path = path_arg(args, "file_path", "absolute_path", "path")
    if ok:
        if name == "read_file" and path:
            read = _read(path, args, text)
            if read is not None:
                return read
        if name in _SEARCH:
            return Search(_SEARCH[name])
        if name in _EDITS and isinstance(display, dict) and isinstance(display.get("newContent"),
                                                                         str):  # fmt: skip
            old = display.get("originalContent")
            target = path_arg(display, "filePath") or path
            if target and (isinstance(old, str) or display.get("isNewFile") or old is None):
                return Edit(target, old if isinstance(old, str) else None, display["newContent"])
    changes = (path,) if name in _EDITS and path and ok else ()
    return Other("bash" if name in _SHELL else name, changes)


def _read(path: str, args: dict[str, Any], text: str) -> Read | None:
    if text.startswith("<tool_output_masked>"):
        return None  # Gemini replaced the output in the saved file: the lines are not there
    m = _STATUS.search(text[:2000])
    if m and _CONTENT in text:
        body = text.split(_CONTENT, 1)[1]
        return Read(path, int(m.group(1)), text_lines(body), int(m.group(3)))
    offset = args.get("offset")
    first = (offset + 1) if isinstance(offset, int) and not isinstance(offset, bool) and \
        offset >= 0 else 1  # fmt: skip
    lines = text_lines(text)
    total = first + len(lines) - 1 if positive(args.get("limit")) is None else None
    return Read(path, first, lines, total)


def source_ids(rec: Any) -> dict[str, Any] | None:
    """The session id and start the JSONL file's header gives; a sub-agent's file (header
    `kind: "subagent"`, in `chats/<the parent's session id>/`) names its own id as the agent."""
    if not isinstance(rec, dict) or not id_text(rec.get("sessionId")) or "projectHash" not in rec:
        return None
    agent = rec["sessionId"] if rec.get("kind") == SUBAGENT else None
    dirs = rec.get("directories")  # a sub-agent's header lists its workspace's folders
    cwd = path_text(dirs[0]) if isinstance(dirs, list) and dirs else None
    return {
        "session": rec["sessionId"],
        "cwd": cwd or None,
        "ts": rec.get("startTime"),
        "agent": agent,
    }
