"""pi coding agent session JSONL (`~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl`,
FORMATS.md 6), v1 (linear, no entry ids) and v3 (entries with `id`/`parentId`), into a ctxview
session `pi-<session id>`.

File order is the order (a v3 file's branches, made by /tree, follow one another as written).
One `message` entry is one whole message: a user prompt, one model response (text, thinking,
parallel `toolCall` blocks, its usage, which pi counts additively as Claude does), a
`toolResult`, or a `bashExecution` (a command the person ran with `!`, whose output pi puts in
the model's context: stored as a bash result, under its own ref). `compaction` entries are
compactions (their summary is what the model got instead of the history).

Tools: `read {path, offset, limit}` is a read (pi's text is the file's lines from `offset`,
1-based, and when more follow `[N more lines in file. Use offset=M to continue]` or `[Showing
lines a-b of T ...]`, which give the file's length); `grep`, `find`, `ls` are grep, glob and
list; `edit` and `write` change their path (pi keeps only a diff of the lines around an edit,
not the file, so the result is stored as pi gave it); `bash` and the rest are capped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ctxview.importers.agent_tools import (
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
    block_text,
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

_SEARCH = {"grep": "grep", "find": "glob", "ls": "list"}
_CHANGES = ("edit", "write")
_MORE = re.compile(r"\n\n\[(\d+) more lines in file\. Use offset=(\d+) to continue\.?\]\s*\Z")
_SHOWING = re.compile(r"\n\n\[Showing lines (\d+)-(\d+) of (\d+)[^\]\n]*\]\s*\Z")
_QUIET = frozenset({"session", "thinking_level_change", "custom", "label"})


class PiParser(SimpleParser):
    def __init__(self, hub: Hub, state: dict[str, Any]) -> None:
        self.hub = hub
        self._pending: dict[str, dict[str, Any]] = state.get("pending", {})
        self._model: str | None = state.get("model")
        self.quiet: dict[str, int] = {}
        self._live = LiveCalls(hub)  # what the hooked session stored itself

    def state(self) -> dict[str, Any]:
        return {"pending": self._pending, "model": self._model}

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the record")
        kind = need(rec.get("type"), str, "type")
        check_ids(rec, ("id", "parentId"), ("cwd",))
        check_time(rec.get("timestamp"))
        ts = when(rec.get("timestamp"), self.hub.last_ts)
        self.hub.last_ts = ts
        main = self.hub.main
        if kind == "message":
            await self._message(need(rec.get("message"), dict, "message"), rec, lineno, ts)
        elif kind == "model_change":
            self._model = id_text(rec.get("modelId")) or self._model
        elif kind == "session_info":
            if isinstance(rec.get("name"), str) and rec["name"].strip():
                main.titled(rec["name"].strip())
        elif kind == "compaction":
            summary = rec.get("summary")
            data: dict[str, Any] = {"source": "compaction"}
            for key in ("tokensBefore", "firstKeptEntryIndex", "firstKeptEntryId", "fromHook"):
                if key in rec:
                    data[key] = rec[key]
            details = rec.get("details")
            if isinstance(details, dict):
                data["details"] = {k: details[k] for k in ("readFiles", "modifiedFiles")
                                   if isinstance(details.get(k), list)}  # fmt: skip
            await main.compact(summary if isinstance(summary, str) else "", ts=ts, data=data)
        elif kind == "branch_summary":
            summary = rec.get("summary")
            await main.message("system", summary if isinstance(summary, str) else "", ts=ts,
                               data={"subtype": "branch_summary"})  # fmt: skip
        elif kind in _QUIET or kind == "custom_message":
            self.skip(kind)
        else:
            raise BadRecord(f"unknown entry type {kind!r}")

    async def _message(self, msg: dict[str, Any], rec: dict[str, Any], lineno: int,
                       ts: float) -> None:  # fmt: skip
        role = need(msg.get("role"), str, "message.role")
        main = self.hub.main
        content = msg.get("content")
        if role == "user":
            await main.message("user", block_text(need(content, (list, str), "content")), ts=ts)
        elif role == "assistant":
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[tuple[str, str, dict[str, Any]]] = []
            for block in need(content, list, "message.content"):
                need(block, dict, "a content block")
                btype = block.get("type")
                if btype == "text":
                    texts.append(need(block.get("text", ""), str, "text"))
                elif btype == "thinking":
                    thinking.append(need(block.get("thinking", ""), str, "thinking"))
                elif btype == "toolCall":
                    args = block.get("arguments")
                    calls.append((need(block.get("id"), str, "toolCall.id"),
                                  str(block.get("name", "tool")),
                                  args if isinstance(args, dict) else {"arguments": args}))  # fmt: skip
            data: dict[str, Any] = {}
            model = id_text(msg.get("model")) or self._model
            if model:
                data["model"] = model
            if thinking:
                data["thinking"] = "\n\n".join(thinking)
            usage = _usage(msg.get("usage"))
            if usage:
                data["usage"] = usage
            for key in ("stopReason", "errorMessage", "provider", "api"):
                if isinstance(msg.get(key), str):
                    data[key] = msg[key]
            for call_id, name, args in calls:
                self._pending[call_id] = {"name": name, "input": args}
            await main.message("assistant", "\n\n".join(t for t in texts if t), ts=ts, data=data)
        elif role == "toolResult":
            call_id = need(msg.get("toolCallId"), str, "toolCallId")
            call = self._pending.pop(call_id, None) or {
                "name": str(msg.get("toolName") or "unknown"), "input": {}}  # fmt: skip
            if await self._live.stored(call_id):
                return
            text = block_text(need(content, (list, str), "content"))
            how = _how(call["name"], call["input"], text, content, bool(msg.get("isError")))
            await put_result(main, how, call["input"], text, call_ref=call_id, seen=len(text),
                             ts=ts)  # fmt: skip
        elif role == "bashExecution":
            command = msg.get("command")
            output = msg.get("output")
            text = output if isinstance(output, str) else ""
            code = msg.get("exitCode")
            if isinstance(code, int) and code:
                text = (
                    f"{text.rstrip(chr(10))}\nExit code {code}." if text else f"Exit code {code}."
                )
            ref = f"pi-bash:{id_text(rec.get('id')) or lineno}"
            await put_result(main, Other("bash"), {"command": command, "by": "user"}, text,
                             call_ref=ref, seen=len(text), ts=ts)  # fmt: skip
        else:
            # Extensions' messages (custom, branchSummary, ...): context the model got.
            await main.message("system", block_text(content), ts=ts, data={"subtype": role})


def _how(name: str, args: dict[str, Any], text: str, content: Any, error: bool) -> How:
    if not error:
        path = path_arg(args, "path", "file_path")
        if name == "read" and path and not _has_image(content):
            read = read_of(path, args, text)
            if read is not None:
                return read
        if name in _SEARCH:
            return Search(_SEARCH[name])
    path = path_arg(args, "path", "file_path")
    changes = (path,) if name in _CHANGES and path and not error else ()
    return Other("bash" if name == "bash" else name, changes)


def read_of(path: str, args: dict[str, Any], text: str) -> Read | None:
    """pi's read text as lines: from `offset` (1-based), and the file's length when pi says it."""
    first = positive(args.get("offset")) or 1
    total: int | None = None
    body = text
    m = _MORE.search(text)
    if m:
        body = text[: m.start()]
        total = int(m.group(2)) - 1 + int(m.group(1))
    else:
        m = _SHOWING.search(text)
        if m:
            body = text[: m.start()]
            first, total = int(m.group(1)), int(m.group(3))
    lines = body.split("\n") if m else text_lines(body)
    if not lines and first > 1:
        return None
    if total is None and positive(args.get("limit")) is None:
        total = first + len(lines) - 1  # read to its end: this is the file's length
    return Read(path, first, lines, total)


def _has_image(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "image" for b in content)  # fmt: skip


def _usage(usage: Any) -> dict[str, int] | None:
    """pi counts like Claude: input excludes the cache reads and writes."""
    if not isinstance(usage, dict):
        return None

    def n(key: str) -> int:
        v = usage.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    out = {"input_tokens": n("input"), "output_tokens": n("output"),
           "cache_read_tokens": n("cacheRead"), "cache_write_tokens": n("cacheWrite")}  # fmt: skip
    return out if any(out.values()) else None


def source_ids(rec: Any) -> dict[str, Any] | None:
    """The session id, cwd and start pi's `session` header gives."""
    if not isinstance(rec, dict) or rec.get("type") != "session" or not id_text(rec.get("id")):
        return None
    return {"session": rec["id"], "cwd": path_text(rec.get("cwd")), "ts": rec.get("timestamp"),
            "version": rec.get("version")}  # fmt: skip
