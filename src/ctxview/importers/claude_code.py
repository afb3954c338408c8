"""Claude Code session JSONL, record by record (FORMATS.md §1), into ctxview sessions.

File order is kept. Split assistant records (one per content block, sharing `message.id`) are
merged into one message event, emitted when the run is interrupted (a tool result, a prompt, the
end of what is there to read); its usage is the largest seen for that id, and should more of the
same message come later, the later event carries only what grew, so usage summed over events
counts each message once. A tool call is stored with its result, paired by `tool_use_id`.
Sidechains: inline ones (1.0.x) become child sessions `cc-sc-<root uuid>` linked to the `Task`
call whose prompt their first record repeats; agent files (2.0.x, 2.1.x) are imported as
sessions of their own by the runner, and a parent's `Task`/`Agent` result names them by
`toolUseResult.agentId`.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxview.importers import api_requests
from ctxview.importers.common import (
    BadRecord,
    block_text,
    check_ids,
    check_time,
    claude_usage,
    id_text,
    need,
    path_text,
    usage_delta,
    usage_max,
    when,
    whole,
)
from ctxview.importers.replay import Replay, numbered_lines
from ctxview.store.session_lock import HookPending, held_here, lock_free

if TYPE_CHECKING:
    from ctxview.importers.hub import Hub

# Record types that carry nothing to replay (FORMATS.md 1.3): metadata, UI mirrors, hooks.
_QUIET = frozenset({
    "file-history-snapshot", "queue-operation", "progress", "attachment", "permission-mode",
    "last-prompt", "pr-link", "agent-name", "worktree-state", "mode",
})  # fmt: skip
_TITLES = ("custom-title", "ai-title")
# What api_requests.py reads: request records, cost-state, and the transcript's messages.
_API_ROWS = api_requests.KINDS | {api_requests.COST_KIND, "user", "assistant"}

# Source tool name -> engine tool name for the ones the rules treat specially.
_SEARCH = {"Grep": "grep", "Glob": "glob", "LS": "list"}
_EDITS = {"Edit": "edit", "MultiEdit": "multiedit", "Write": "write"}
_RENAME = {"Bash": "bash", "Read": "read"}
_AGENT_TOOLS = ("Task", "Agent")
_KEEP_MESSAGE_IDS = 64
# Claude Code's attachment records of a hook that did not answer as a hook should.
_HOOK_ERRORS = ("hook_non_blocking_error", "hook_error_during_execution", "hook_cancelled",
                "hook_failed")  # fmt: skip


class ClaudeParser:
    def __init__(self, hub: Hub, state: dict[str, Any], *, agent_file: bool) -> None:
        self.hub = hub
        self.agent_file = agent_file  # every record is the file's own sidechain session
        self._pending: dict[str, dict[str, Any]] = state.get("pending", {})
        self._emitted: OrderedDict[str, dict[str, int]] = OrderedDict(state.get("emitted", []))
        self._side: dict[str, str] = state.get("side", {})  # sidechain uuid -> session id
        self._compact: dict[str, Any] | None = state.get("compact")
        # The assistant message being gathered (its next record may continue it), and at the
        # end of what was read the seq it was stored at provisionally.
        self._msg: dict[str, Any] | None = state.get("msg")
        self._hooked: dict[str, set[str]] = {}  # session -> results a hook stored
        # Claude Code's own request records (api_requests.py); kept across `provisional`'s
        # re-init, as its message pool is not part of the saved state.
        self._api: api_requests.Collector = getattr(self, "_api", None) or api_requests.Collector(
            state.get("api")
        )
        self.quiet: dict[str, int] = getattr(self, "quiet", {})  # kinds skipped -> count

    def state(self) -> dict[str, Any]:
        return {
            "pending": self._pending,
            "emitted": list(self._emitted.items()),
            "side": self._side,
            "compact": self._compact,
            "msg": self._msg,
            "api": self._api.state(),
        }

    def unsaid(self) -> bool:
        """A message is being gathered that is not stored yet (a commit fell at the end of the
        file, before `provisional` ran)."""
        return self._msg is not None and not self._msg.get("provisional")

    async def provisional(self) -> None:
        """The end of what is written: the gathered message is stored as it is (a reader sees
        it) and stays open; if the file grows and its next record continues it, the stored event
        is replaced by the whole message, as one import of the whole file would store it."""
        if self._msg is None:
            return
        if (await self.hub.replay(self._msg["sid"])).data.get("hooked"):
            # Claude Code's hook stores this message's tool results right after it: it is
            # stored for good now (more of it later is a continuation), not moved past them.
            await self.flush()
            return
        before = copy.deepcopy(self.state())
        sid = self._msg["sid"]
        if await self.flush():
            self.__init__(self.hub, before, agent_file=self.agent_file)  # type: ignore[misc]  # reset to `before` in place
            assert self._msg is not None
            self._msg["provisional"] = await self.hub.writer.last_seq(sid)

    # Records

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the record")
        kind = need(rec.get("type"), str, "type")
        check_ids(rec, ("sessionId", "agentId", "uuid", "parentUuid"), ("cwd",))
        check_time(rec.get("timestamp"))
        if kind in _API_ROWS:
            rows = self._api.feed(rec)
            if rows:
                await api_requests.write_rows(self.hub.writer, self.hub.main.id, rows)
            if kind not in ("user", "assistant"):
                return
        if kind in _QUIET or kind in api_requests.QUIET_KINDS:
            if kind == "attachment":
                self._hook_error(rec)
            self.quiet[kind] = self.quiet.get(kind, 0) + 1
            return
        if kind == "summary":
            if isinstance(rec.get("summary"), str) and not self.hub.main.data.get("titled"):
                self.hub.main.titled(rec["summary"])
            return
        if kind in _TITLES:
            title = rec.get("customTitle") or rec.get("aiTitle") or rec.get("title")
            if isinstance(title, str):
                self.hub.main.titled(title)
            return
        if kind not in ("user", "assistant", "system"):
            raise BadRecord(f"unknown record type {kind!r}")
        ts = when(rec.get("timestamp"), self.hub.last_ts)
        self.hub.last_ts = ts
        replay = await self._session_of(rec, ts)
        if kind == "assistant":
            await self._assistant(rec, replay, ts)
            return
        await self.flush()
        if kind == "system":
            await self._system(rec, replay, ts)
        else:
            await self._user(rec, replay, ts)

    def _hook_error(self, rec: dict[str, Any]) -> None:
        """Claude Code's record of a hook that failed (refused, timed out, an error status): kept
        for the host's hook engine, which records the ones that were its own for `ctxview
        doctor` (the model got Claude Code's own output then)."""
        att = rec.get("attachment")
        if not isinstance(att, dict) or att.get("type") not in _HOOK_ERRORS:
            return
        self.hub.hook_errors.append({
            "session_id": id_text(rec.get("sessionId")) or "",
            "event": str(att.get("hookEvent") or ""), "hook": str(att.get("hookName") or ""),
            "tool_use_id": att.get("toolUseID") if isinstance(att.get("toolUseID"), str) else "",
            "error": str(att.get("stderr") or att.get("error") or att.get("type"))[:500],
            "command": str(att.get("command") or "")[:500],
        })  # fmt: skip

    async def _session_of(self, rec: dict[str, Any], ts: float) -> Replay:
        """The ctxview session a record belongs to: the file's, or an inline sidechain's."""
        if self.agent_file or not rec.get("isSidechain"):
            return self.hub.main
        uuid, parent = id_text(rec.get("uuid")), id_text(rec.get("parentUuid"))
        sid = self._side.get(parent) if parent else None
        if sid is None:
            sid = f"cc-sc-{uuid}"
            prompt = _prompt_text(rec)
            call = next((cid for cid, c in self._pending.items()
                         if c["name"] in _AGENT_TOOLS and not c.get("linked")
                         and c["input"].get("prompt") == prompt), None)  # fmt: skip
            title = "sidechain"
            if call is not None:
                self._pending[call]["linked"] = sid
                title = str(self._pending[call]["input"].get("description") or title)
            await self.hub.child(sid, title=title, parent_call=call, started=ts, source_ref=uuid)
        if uuid:
            self._side[uuid] = sid
        return await self.hub.replay(sid)

    async def _assistant(self, rec: dict[str, Any], replay: Replay, ts: float) -> None:
        msg = need(rec.get("message"), dict, "message")
        content = msg.get("content", [])
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        need(content, list, "message.content")
        # Check the whole record before anything changes, so a bad one is skipped whole.
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[tuple[str, str, dict[str, Any]]] = []
        for block in content:
            need(block, dict, "a content block")
            btype = block.get("type")
            if btype == "text":
                texts.append(need(block.get("text", ""), str, "text"))
            elif btype == "thinking":
                thinking.append(need(block.get("thinking", ""), str, "thinking"))
            elif btype == "tool_use":
                args = block.get("input")
                calls.append((need(block.get("id"), str, "tool_use.id"),
                              str(block.get("name", "tool")),
                              args if isinstance(args, dict) else {"input": args}))  # fmt: skip
            # redacted_thinking, server tool blocks: nothing the rules act on
        mid = id_text(msg.get("id")) or id_text(rec.get("uuid"))
        if self._msg is not None and (self._msg["id"] != mid or self._msg["sid"] != replay.id):
            await self.flush()
        if self._msg is None:
            self._msg = {"id": mid, "sid": replay.id, "ts": ts, "text": [], "thinking": [],
                         "usage": None, "model": id_text(msg.get("model"))}  # fmt: skip
        if msg.get("model") != "<synthetic>":
            self._msg["usage"] = usage_max(self._msg["usage"], claude_usage(msg.get("usage")))
        self._msg["text"].extend(texts)
        self._msg["thinking"].extend(thinking)
        for call_id, name, args in calls:
            self._pending[call_id] = {"name": name, "input": args, "ts": ts, "sid": replay.id}
        held = self.hub.held
        if held is not None:
            for call_id, _, _ in calls:
                if held.has(replay.id, call_id):  # the hook answered it: its events go in here
                    await self.flush()  # after the message that made the call
                    await held.put(replay.id, call_id)

    async def flush(self) -> bool:
        """Emit the buffered assistant message (the run of split records is over for now);
        False when there was nothing to emit."""
        m, self._msg = self._msg, None
        if m is None:
            return False
        if m.get("provisional"):  # stored at the end of the last read: this replaces it
            await self.hub.writer.delete_message(m["sid"], m["provisional"])
        data: dict[str, Any] = {}
        if m["id"]:
            data["message_id"] = m["id"]
        if m["model"]:
            data["model"] = m["model"]
        if m["thinking"]:
            data["thinking"] = "\n\n".join(m["thinking"])
        usage = m["usage"]
        before = self._emitted.get(m["id"]) if m["id"] else None
        if before is not None:  # more of a message emitted earlier: only what grew
            data["continued"] = True
            grew = usage_delta(usage, before) if usage else None
            if grew:
                data["usage"] = grew
                usage = usage_max(before, usage)
            else:
                usage = before
            if not m["text"] and not m["thinking"] and not grew:
                return False
        elif usage is not None:
            data["usage"] = usage
        if m["id"]:
            self._emitted[m["id"]] = usage or {}
            self._emitted.move_to_end(m["id"])
            while len(self._emitted) > _KEEP_MESSAGE_IDS:
                self._emitted.popitem(last=False)
        text = "\n\n".join(t for t in m["text"] if t)
        await (await self.hub.replay(m["sid"])).message("assistant", text, ts=m["ts"], data=data)
        return True

    async def _system(self, rec: dict[str, Any], replay: Replay, ts: float) -> None:
        sub = rec.get("subtype")
        if sub == "compact_boundary":
            await self._close_compaction(replay)
            meta = rec.get("compactMetadata")
            self._compact = {"ts": ts, "sid": replay.id,
                             "meta": meta if isinstance(meta, dict) else {}}  # fmt: skip
            return
        content = rec.get("content")
        data: dict[str, Any] = {"subtype": sub}
        if sub == "microcompact_boundary":
            data["microcompact"] = rec.get("microcompactMetadata")
        elif sub == "turn_duration" and isinstance(rec.get("durationMs"), int | float):
            content = content or f"Turn took {rec['durationMs'] / 1000:.1f} s."
        for key in ("level", "toolUseID", "hookCount", "stopReason"):
            if key in rec:
                data[key] = rec[key]
        text = content if isinstance(content, str) else (str(sub) if sub else "")
        await replay.message("system", text, ts=ts, data=data)

    async def _close_compaction(self, replay: Replay, summary: str = "") -> None:
        c, self._compact = self._compact, None
        if c is None:
            return
        target = await self.hub.replay(c["sid"]) if c.get("sid") else replay
        if target.data.get("hooked"):
            return  # Claude Code's hook recorded this compaction and gave the model its table
        data = {"source": "compact_boundary", **{k: v for k, v in c["meta"].items()
                                                  if isinstance(k, str)}}  # fmt: skip
        await target.compact(summary, ts=c["ts"], data=data)

    async def _user(self, rec: dict[str, Any], replay: Replay, ts: float) -> None:
        msg = need(rec.get("message"), dict, "message")
        content = msg.get("content")
        if rec.get("isCompactSummary"):
            if self._compact is None:
                self._compact = {"ts": ts, "sid": replay.id, "meta": {}}
            await self._close_compaction(replay, block_text(content))
            return
        await self._close_compaction(replay)
        data: dict[str, Any] = {}
        if rec.get("isMeta"):
            data["meta"] = True
        if isinstance(content, str):
            if self.agent_file and content.strip() == "Warmup":
                self.hub.main.data["warmup"] = True  # a 2-record warm-up agent: noise to hide
            note = task_notification(content)
            if note is not None:  # before the message, where the hook (which runs first) puts it
                await self._report(replay, note, content, id_text(rec.get("promptId")), ts)
            await replay.message("user", content, ts=ts, data=data or None)
            return
        need(content, list, "message.content")
        said: list[Any] = []
        results: list[dict[str, Any]] = []
        for block in content:
            need(block, dict, "a content block")
            (results if block.get("type") == "tool_result" else said).append(block)
        if said:
            await replay.message("user", block_text(said), ts=ts, data=data or None)
        tur = rec.get("toolUseResult")
        for block in results:
            await self._result(block, tur if len(results) == 1 else None, replay, ts)

    # Tool results

    async def _result(self, block: dict[str, Any], tur: Any, replay: Replay, ts: float) -> None:
        call_id = need(block.get("tool_use_id"), str, "tool_result.tool_use_id")
        call = self._pending.pop(call_id, None)
        if call is None:  # its call is before this file (a slice or a resumed session)
            call = {"name": "unknown", "input": {}, "sid": replay.id}
        target = await self.hub.replay(call["sid"])
        text = block_text(block.get("content"))
        error = bool(block.get("is_error")) or (isinstance(tur, str) and tur.startswith("Error"))
        name, args = call["name"], call["input"]
        ref = dict(call_ref=call_id, seen=len(text), ts=ts)
        if name in _AGENT_TOOLS and isinstance(tur, dict) and id_text(tur.get("agentId")):
            await self.hub.link_agent(tur["agentId"], call_id)
        if call.get("linked"):
            # The inline sidechain is over: its state goes to the store, not kept in memory.
            done = call["linked"]
            self._side = {u: sid for u, sid in self._side.items() if sid != done}
            await self.hub.release(done)
        if await self._stored_by_hook(target, call_id):
            return
        if not error:
            if name == "Read" and await self._read(target, args, text, tur, ref):
                return
            if name in _SEARCH:
                await target.search(_SEARCH[name], args, text, **ref)
                return
            if name in _EDITS and await self._edit(target, name, args, tur, ref):
                return
        changes = (args["file_path"],) if name in _EDITS and isinstance(
            args.get("file_path"), str) and not error else ()  # fmt: skip
        await target.generic(_RENAME.get(name, name), args, text, changes=changes, **ref)

    async def _report(self, replay: Replay, note: TaskNotification, prompt: str,
                      prompt_id: str | None, ts: float) -> None:  # fmt: skip
        """A background task's report (a `<task-notification>` prompt): stored under an id, as
        the hook's UserPromptSubmit stores it, unless the hook already did."""
        ref = note.ref(prompt_id, prompt)
        if await self._stored_by_hook(replay, ref):
            return
        await replay.beside(NOTIFICATION_TOOL, note.args(), note.report, note.line, call_ref=ref,
                            seen=len(prompt), ts=ts)  # fmt: skip

    async def _stored_by_hook(self, target: Replay, call_id: str) -> bool:
        """A result Claude Code's hook already stored with the id the model saw
        (src/ctxview/agents/claude_code/hooks.py): the import adds what is around it, never a second."""
        if not target.data.get("hooked"):
            return False
        if self.hub.held is not None and self.hub.held.has(target.id, call_id):
            return True  # answered by the hook in this process; its events go in with it
        known = self._hooked.get(target.id)
        if known is None or call_id not in known:  # the hook may have stored it since
            known = self._hooked[target.id] = await self.hub.writer.tree_call_refs(target.id)
        store = self.hub.writer.path
        waited = self.hub.waited
        if call_id not in known and (target.id, call_id) not in waited:
            # The hook answers before it stores the call, holding its session tree's lock (the
            # root's: a sub-agent's calls are under its parent's) from the call's arrival to its
            # events' commit: read this again once it is stored (or the lock is free). With
            # nobody holding it, the call's hook failed: imported now.
            root = await self.hub.writer.tree_root(target.id)
            if not held_here(store, root) and not lock_free(store, root):
                waited.add((target.id, call_id))
                raise HookPending(store, target.id, call_id, root)
        if call_id in known:
            return True
        # Imported here (its hook failed): past the ids the hook took since this import looked.
        target.session.advance_ids(await self.hub.writer.tree_next_rid(target.id))
        return False

    async def _read(self, replay: Replay, args: dict[str, Any], text: str, tur: Any,
                    ref: dict[str, Any]) -> bool:  # fmt: skip
        path = args.get("file_path")
        if not isinstance(path, str):
            return False
        file = tur.get("file") if isinstance(tur, dict) else None
        window = replay.session.config["window.lines"]
        total: int | None
        if isinstance(file, dict) and isinstance(file.get("content"), str):
            if isinstance(tur, dict) and tur.get("type") not in (None, "text"):
                return False  # an image, a notebook, a PDF: not lines
            got = read_lines(file, args, window)
            first, lines, total, maybe_less = got.first, got.lines, got.total, not got.exact
        else:
            found = numbered_lines(text)
            if found is None:
                return False
            first, lines = found
            lines, total, maybe_less = lines[:window], None, False
        await replay.read({"path": path, **{k: v for k, v in args.items() if k != "file_path"}},
                          path, first, lines, total, maybe_one_less=maybe_less, **ref)  # fmt: skip
        return True

    async def _edit(self, replay: Replay, name: str, args: dict[str, Any], tur: Any,
                    ref: dict[str, Any]) -> bool:  # fmt: skip
        """Old and new content from `toolUseResult`; False when the transcript lacks them."""
        if not isinstance(tur, dict):
            return False
        path = tur.get("filePath") or args.get("file_path")
        if not isinstance(path, str):
            return False
        old: str | None
        new: str | None
        if name == "Write":
            new = tur.get("content", args.get("content"))
            old = tur.get("originalFile") if tur.get("type") != "create" else None
            if not isinstance(new, str) or (
                tur.get("type") != "create" and not isinstance(old, str)
            ):
                return False
        else:
            old = tur.get("originalFile", tur.get("originalFileContents"))
            if not isinstance(old, str):
                return False
            edits = args.get("edits") if name == "MultiEdit" else [args]
            new = _apply(old, edits)
            if new is None:
                return False
        await replay.edit(_EDITS[name], {"path": path, **{k: v for k, v in args.items()
                                                         if k != "file_path"}},
                          [(path, old, new)], **ref)  # fmt: skip
        return True


# The tool name a task notification's report is stored under (no call of the model's made it).
NOTIFICATION_TOOL = "task-notification"
_NOTIFICATION = re.compile(r"\A\s*<task-notification>\s*(.*?)\s*</task-notification>\s*\Z", re.S)
_FIELD = re.compile(r"<(task-id|tool-use-id|status|summary)>(.*?)</\1>", re.S)


@dataclass
class TaskNotification:
    """Claude Code's `<task-notification>` (2.1.328): a background task (an Agent call, which
    runs in the background by default, or a background command) ended, and its report comes
    to the model as a prompt of its own, later, where no PostToolUse hook sees it."""

    fields: dict[str, str]
    report: str  # `<result>`, the sub-agent's last message; else the whole notification

    def ref(self, prompt_id: str | None, prompt: str) -> str:
        """The report's `call_ref`: the same from the hook's input (`prompt_id`) and from the
        transcript's record of it (`promptId`), one per notification (a task may notify more
        than once)."""
        key = prompt_id or hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{NOTIFICATION_TOOL}:{key}"

    def args(self) -> dict[str, str]:
        return {k.replace("-", "_"): v for k, v in self.fields.items()}

    @staticmethod
    def line(ref: str) -> str:
        return f"[{ref}] is the id of the result in this task notification."


def task_notification(prompt: Any) -> TaskNotification | None:
    """The notification a prompt is, or None."""
    if not isinstance(prompt, str) or "<task-notification>" not in prompt[:200]:
        return None
    m = _NOTIFICATION.match(prompt)
    if m is None:
        return None
    body = m[1]
    fields = {k: v.strip() for k, v in _FIELD.findall(body.split("<result>", 1)[0])}
    start, end = body.find("<result>"), body.rfind("</result>")
    report = body[start + len("<result>") : end].strip("\n") if 0 <= start < end else prompt
    return TaskNotification(fields, report)


@dataclass
class ReadLines:
    """A Claude Code Read as the rules take it: its first line, the lines 3.0.0 shows, and the
    file's length in lines, `exact` unless it may be one less (see `read_lines`)."""

    first: int
    lines: list[str]
    total: int
    exact: bool


def read_lines(file: dict[str, Any], args: dict[str, Any], window: int,
               real_total: int | None = None) -> ReadLines:  # fmt: skip
    """The lines of a Read's `file` ({content, numLines, startLine, totalLines}) that 3.0.0 gives
    the model, the same for the hook (which answers with them) and the import (which replays
    them), so both say `lines 1-2000 of 3000` for one read:

    - Claude Code counts an empty "line" after a final newline (a 3,000-line file is 3,001); the
      rules do not. `real_total`, the file's length the hook counted itself, tells; without it
      a read that reaches the end shows whether the file ends in a newline, and any other read
      gives a length that may be one less than Claude Code's (`exact` False).
    - The read window (spec §3, 2000 lines from the offset): Claude Code reads a whole file
      when no limit is given, so the lines past the window go, and are a read away
      (`offset` = the bracket's last line + 1).
    - A whole-file read past Claude Code's token cap (2.1.328: 25,000 tokens) comes as its
      first page (`truncatedByTokenCap`), followed by Claude Code's banner naming those lines
      ("showing lines 1-N of …, call Read with offset=N+1"): all of them are kept, so the
      bracket and the banner agree and the model can page on as told. (Only a file whose
      first lines are so long that no whole line fits is cut mid-line; its one line is then
      cut the same way at every whole-file read, and a read of it with a limit is refused.)"""
    content = file.get("content") if isinstance(file.get("content"), str) else ""
    lines = content.split("\n") if content else []
    num = whole(file.get("numLines"))
    if num is not None and num < len(lines):
        lines = lines[:num]
    first = whole(file.get("startLine")) or whole(args.get("offset")) or 1
    last = first + len(lines) - 1
    counted = whole(file.get("totalLines"))
    if counted is None or counted < last:
        counted = last
    at_end = last >= counted
    phantom = bool(lines) and lines[-1] == "" and (
        last > real_total if real_total is not None else at_end)  # fmt: skip
    if phantom:
        lines.pop()
    if real_total is not None:
        total, exact = real_total, True
    elif not content and first == 1:  # an empty file (Claude Code counts its one empty line)
        total, exact = 0, True
    elif at_end:
        total, exact = counted - phantom, True
    else:  # most files end in a newline: Claude Code's count is one more, likely
        total, exact = max(counted - 1, last), False
    return ReadLines(first, lines[:window], max(total, first + min(len(lines), window) - 1),
                     exact)  # fmt: skip


def _apply(text: str, edits: Any) -> str | None:
    """Claude Code's edits applied to the original, or None when one does not apply."""
    if not isinstance(edits, list):
        return None
    for e in edits:
        if not isinstance(e, dict):
            return None
        old, new = e.get("old_string"), e.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        if old == "":
            if text:
                return None
            text = new
            continue
        if old not in text:
            return None
        text = text.replace(old, new) if e.get("replace_all") else text.replace(old, new, 1)
    return text


def _prompt_text(rec: dict[str, Any]) -> str | None:
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return block_text([b for b in content if isinstance(b, dict) and b.get("type") == "text"])
    return None


def source_ids(rec: Any) -> dict[str, Any] | None:
    """What a record tells about the session it belongs to: its id, cwd, start, agent."""
    if not isinstance(rec, dict) or not isinstance(rec.get("sessionId"), str):
        return None
    return {
        "session": rec["sessionId"],
        "agent": id_text(rec.get("agentId")) if rec.get("isSidechain") else None,
        "cwd": path_text(rec.get("cwd")),
        "ts": rec.get("timestamp"),
        "version": rec.get("version"),
    }
