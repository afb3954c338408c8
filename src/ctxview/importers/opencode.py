"""OpenCode sessions (FORMATS.md 9), from its SQLite database (`opencode.db`, 1.x; read by
store/foreign_opencode.py) or its older storage/ folder of JSON files, into ctxview sessions
`oc-<session id>` (importers/documents.py reads the source and feeds each message here with its
parts). A sub-agent's session (`parentID`, started by a `task` call) is linked to that call.

A user message's `text` parts are the prompt (`synthetic` ones are context OpenCode added: kept,
marked meta); an assistant message's parts in their order: `reasoning` and `text` gather into a
message event, stored before each `tool` part (a call and its result in one) and at the end;
its `tokens` (input excludes the cache, as Claude counts) go on its last event. An assistant
message marked `summary` is a compaction: its text is what the model got instead of the history.

A session ctxview's plugin wrote live (`hooked`, agents/opencode/) already holds its tool results
and compactions, by OpenCode's call id and summary message id: the import adds the messages and
usage around them, never a second copy (`hub.LiveCalls`).

Tools: `read {filePath, offset (0-based), limit}` is a read (OpenCode numbers its lines `00012|
text` or `12: text`, and says the file's length when it stops early); `grep`, `glob`, `list` are
the searches; `edit`/`write`/`patch`/`multiedit` are edits when their metadata carries the file
before and after (`filediff`), else they change their path; `bash` is bash; the rest is capped.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

from ctxview.importers.agent_tools import (
    Edit,
    How,
    Other,
    Read,
    Search,
    SimpleParser,
    numbered,
    path_arg,
    put_result,
)
from ctxview.importers.common import BadRecord, id_text, need, when
from ctxview.importers.hub import LiveCalls

if TYPE_CHECKING:
    from ctxview.importers.hub import Hub

_SEARCH = {"grep": "grep", "glob": "glob", "list": "list", "ls": "list"}
_EDITS = ("edit", "write", "patch", "multiedit", "apply_patch")
_NUMBERED = (re.compile(r"^0*(\d+)\| ?(.*)$"), re.compile(r"^(\d+): ?(.*)$"))
_TOTAL = (re.compile(r"total (\d+) lines"), re.compile(r"of (\d+)(?: lines)?[.)]"))
_QUIET_PARTS = frozenset({"step-start", "step-finish", "snapshot", "patch", "agent", "retry",
                          "subtask"})  # fmt: skip


class OpenCodeParser(SimpleParser):
    def __init__(self, hub: Hub, state: dict[str, Any]) -> None:
        self.hub = hub
        self.quiet: dict[str, int] = {}
        self._live = LiveCalls(hub)  # what ctxview's plugin stored itself (a hooked session)

    def state(self) -> dict[str, Any]:
        return {}

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the message")
        info = need(rec.get("info"), dict, "message info")
        parts = need(rec.get("parts", []), list, "parts")
        role = need(info.get("role"), str, "role")
        t = info.get("time")
        created = t.get("created") if isinstance(t, dict) else None
        ms = created if isinstance(created, int | float) and not isinstance(created, bool) else None
        ts = when(ms / 1000 if ms is not None else None, self.hub.last_ts)
        self.hub.last_ts = ts
        main = self.hub.main
        if role == "user":
            for p in parts:
                need(p, dict, "a part")
                kind = p.get("type")
                if kind == "text" and isinstance(p.get("text"), str):
                    meta = {"meta": True} if p.get("synthetic") else None
                    await main.message("user", p["text"], ts=ts, data=meta)
                elif kind == "file":
                    name = p.get("filename") or p.get("url") or "file"
                    await main.message("user", f"[file {name}]", ts=ts, data={"meta": True})
                elif kind == "compaction":
                    self.skip("compaction request")
                else:
                    self.skip(f"part {kind}")
            return
        if role != "assistant":
            raise BadRecord(f"unknown message role {role!r}")
        if info.get("summary") is True:
            if await self._compacted_live(info.get("id")):
                return
            summary = "\n\n".join(p["text"] for p in parts if isinstance(p, dict)
                                  and p.get("type") == "text" and isinstance(p.get("text"), str))  # fmt: skip
            await main.compact(summary, ts=ts, data={"source": "summary"})
            return
        text: list[str] = []
        thinking: list[str] = []
        base = _data(info)

        async def flush(final: bool) -> None:
            if not (text or thinking or (final and "usage" in base)):
                return
            data = {k: v for k, v in base.items() if k != "usage" or final}
            if thinking:
                data["thinking"] = "\n\n".join(thinking)
            await main.message("assistant", "\n\n".join(text), ts=ts, data=data)
            text.clear()
            thinking.clear()

        for p in parts:
            need(p, dict, "a part")
            kind = p.get("type")
            if kind == "text" and isinstance(p.get("text"), str):
                text.append(p["text"])
            elif kind == "reasoning" and isinstance(p.get("text"), str):
                thinking.append(p["text"])
            elif kind == "tool":
                await flush(False)
                await self._tool(p, ts)
            else:
                self.skip(f"part {kind}")
        await flush(True)

    async def _tool(self, part: dict[str, Any], fallback: float) -> None:
        state = need(part.get("state"), dict, "tool state")
        call_id = id_text(part.get("callID")) or id_text(part.get("id")) or "call"
        if await self._live.stored(call_id):
            return
        name = str(part.get("tool") or "tool")
        args = state.get("input")
        args = args if isinstance(args, dict) else {"input": args}
        status = state.get("status")
        if status == "completed":
            out = state.get("output")
            text = out if isinstance(out, str) else ("" if out is None else str(out))
        elif status == "error":
            err = state.get("error")
            text = err if isinstance(err, str) else str(err)
        else:
            self.skip("tool not finished")
            return
        times = state.get("time")
        end = times.get("end") if isinstance(times, dict) else None
        ts = when(end / 1000, fallback) if isinstance(end, int | float) and not isinstance(
            end, bool) else fallback  # fmt: skip
        meta = state.get("metadata")
        how = tool_how(
            name, args, text, meta if isinstance(meta, dict) else {}, status == "completed"
        )
        await put_result(self.hub.main, how, args, text, call_ref=call_id, seen=len(text), ts=ts)

    async def _compacted_live(self, message_id: Any) -> bool:
        """Whether the plugin recorded this summary message's compaction (agents/opencode:
        its boundary carries the message id), so the import does not record a second."""
        main = self.hub.main
        if not main.data.get("hooked") or not isinstance(message_id, str):
            return False
        state = await self.hub.writer.session_state(main.id)
        for event in state["events"]:
            if event.kind == "compaction" and event.data:
                with contextlib.suppress(ValueError):
                    if json.loads(event.data).get("summary_id") == message_id:
                        return True
        return False


def _data(info: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if isinstance(info.get("modelID"), str):
        data["model"] = info["modelID"]
    tokens = info.get("tokens")
    if isinstance(tokens, dict):
        got = tokens.get("cache")
        cache: dict[str, Any] = got if isinstance(got, dict) else {}

        def n(d: dict[str, Any], key: str) -> int:
            v = d.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

        usage = {"input_tokens": n(tokens, "input"),
                 "output_tokens": n(tokens, "output") + n(tokens, "reasoning"),
                 "cache_read_tokens": n(cache, "read"), "cache_write_tokens": n(cache, "write")}  # fmt: skip
        if any(usage.values()):
            data["usage"] = usage
    err = info.get("error")
    if isinstance(err, dict):
        data["error"] = str(err.get("name") or "error")
    return data


def tool_how(name: str, args: dict[str, Any], text: str, meta: dict[str, Any], ok: bool) -> How:
    path = path_arg(args, "filePath", "path", "file_path")
    if ok:
        if name == "read" and path:
            read = _read(path, args, text)
            if read is not None:
                return read
        if name in _SEARCH:
            return Search(_SEARCH[name])
        diff = meta.get("filediff")
        if name in _EDITS and isinstance(diff, dict) and isinstance(diff.get("after"), str):
            before = diff.get("before")
            target = path_arg(diff, "file") or path
            if target:
                return Edit(target, before if isinstance(before, str) and before else None,
                            diff["after"])  # fmt: skip
    changes = (path,) if name in _EDITS and path and ok else ()
    return Other(name, changes)


def _read(path: str, args: dict[str, Any], text: str) -> Read | None:
    """The numbered lines between OpenCode's markers (`<file>`, `<content>`), and the file's
    length when its closing note says it."""
    body: list[str] = []
    notes: list[str] = []
    for line in text.split("\n"):
        if any(p.match(line) for p in _NUMBERED):
            body.append(line)
        elif body:
            notes.append(line)
    for pattern in _NUMBERED:
        found = numbered("\n".join(body), pattern)
        if found is not None:
            break
    else:
        return None
    first, lines = found
    total: int | None = None
    tail = "\n".join(notes)
    for pattern in _TOTAL:
        m = pattern.search(tail)
        if m:
            total = int(m.group(1))
            break
    if total is None and "more lines" not in tail and not args.get("limit"):
        total = first + len(lines) - 1
    return Read(path, first, lines, total)
