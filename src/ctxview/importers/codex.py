"""Codex CLI rollout JSONL (FORMATS.md §2), enveloped or legacy, into a ctxview session.

Strictly linear: file order is the order. What the human typed comes from `event_msg/user_message`
(the `response_item` user messages also carry injected context); the legacy layout has no events,
so there its user messages are used, injected context left out. A model response (reasoning,
assistant text, tool calls) becomes one assistant message event, emitted when a tool output, a
prompt or usage arrives. Usage: each `token_count` whose running total moved is one model call,
its `last_token_usage` normalised (cached input is inside input for Codex) and put on the response
event it belongs to (the one buffered, else the next one).

Tools: `shell`/`exec_command` scripts that are a plain `rg`/`grep`, `ls`, `find`/`fd`/`rg --files`
are the engine's grep, list and glob (same-result rule); `sed -n 'a,bp' FILE`, `nl -ba FILE | sed
-n 'a,bp'`, `head -n N FILE` and `cat FILE` are reads (the file's length is not known: the last
line seen stands for it); `apply_patch` (function, custom tool, or `["apply_patch", patch]` through shell) is an
edit where every file's old content is known (added files), else the patch text; the rest is
`bash` or the tool's own name, capped.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from typing import TYPE_CHECKING, Any

from ctxview.importers.common import (
    BadRecord,
    block_text,
    check_ids,
    check_time,
    codex_usage,
    id_text,
    loads_bounded,
    need,
    path_text,
    when,
    whole,
)
from ctxview.importers.hub import LiveCalls
from ctxview.importers.replay import CallRef, Replay
from ctxview.tools import ToolError
from ctxview.tools import patch as patch_tool

if TYPE_CHECKING:
    from ctxview.importers.hub import Hub

_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions",
             "<INSTRUCTIONS>", "<user_shell_command>")  # fmt: skip
_QUIET_ITEMS = frozenset({"ghost_snapshot", "web_search_call", "local_shell_call",
                          "tool_search_call", "image_generation_call", "compaction"})  # fmt: skip
_SHELLS = {"bash", "sh", "zsh"}
_SED = re.compile(r"^sed -n '?(\d+),(\d+)p'? (\S+)$")
_TRUNCATED = re.compile(r"^Total output lines: \d+\n")


class CodexParser:
    def __init__(self, hub: Hub, state: dict[str, Any], *, legacy: bool) -> None:
        self.hub = hub
        self.legacy = legacy
        self._pending: dict[str, dict[str, Any]] = state.get("pending", {})
        self._usage: dict[str, int] | None = state.get("usage")
        self._total: Any = state.get("total")
        self._model: str | None = state.get("model")
        # The response being gathered, and at the end of what was read the seq it was stored at
        # provisionally (see `provisional`).
        self._msg: dict[str, Any] | None = state.get("msg")
        self._live = LiveCalls(hub)  # what the hooked session stored itself

    def state(self) -> dict[str, Any]:
        return {"pending": self._pending, "usage": self._usage, "total": self._total,
                "model": self._model, "msg": self._msg}  # fmt: skip

    def unsaid(self) -> bool:
        """A message is being gathered that is not stored yet (a commit fell at the end of the
        file, before `provisional` ran)."""
        return self._msg is not None and not self._msg.get("provisional")

    async def provisional(self) -> None:
        """The end of what is written: the gathered response is stored as it is and stays open;
        if the file grows, the usage or output that ends it replaces the stored event with the
        whole response, as one import of the whole file would store it."""
        if self._msg is None:
            return
        before = copy.deepcopy(self.state())
        await self.flush()
        self.__init__(self.hub, before, legacy=self.legacy)  # type: ignore[misc]  # reset to `before` in place
        assert self._msg is not None
        self._msg["provisional"] = await self.hub.writer.last_seq(self.hub.main.id)

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the record")
        if "record_type" in rec or ("id" in rec and "type" not in rec):
            return  # legacy state lines and first line
        kind = need(rec.get("type"), str, "type")
        check_time(rec.get("timestamp"))
        ts = when(rec.get("timestamp"), self.hub.last_ts)
        self.hub.last_ts = ts
        if kind in ("session_meta", "turn_context"):
            payload = need(rec.get("payload"), dict, "payload")
            check_ids(payload, ("id",), ("cwd",), "payload.")
            self._model = id_text(payload.get("model")) or self._model
            return
        if kind == "response_item":
            await self._item(need(rec.get("payload"), dict, "payload"), ts)
        elif kind == "event_msg":
            await self._event(need(rec.get("payload"), dict, "payload"), ts)
        elif kind == "compacted":
            payload = need(rec.get("payload"), dict, "payload")
            await self.flush()
            history = payload.get("replacement_history")
            data = {
                "source": "compacted",
                "replacement_items": len(history) if isinstance(history, list) else 0,
            }
            for key in ("window_number", "window_id"):
                if key in payload:
                    data[key] = payload[key]
            message = payload.get("message")
            await self.hub.main.compact(message if isinstance(message, str) else "", ts=ts,
                                        data=data)  # fmt: skip
        elif self.legacy or kind in _ITEM_TYPES:
            await self._item(rec, ts)  # a bare ResponseItem (legacy layout)
        else:
            raise BadRecord(f"unknown record type {kind!r}")

    # Response items

    async def _item(self, item: dict[str, Any], ts: float) -> None:
        kind = need(item.get("type"), str, "payload.type")
        main = self.hub.main
        if kind == "message":
            role = item.get("role")
            text = block_text(need(item.get("content", []), (list, str), "content"))
            if role == "assistant":
                self._buffer(ts)["text"].append(text)
            elif role == "user" and self.legacy and not text.lstrip().startswith(_INJECTED):
                await self.flush()
                await main.message("user", text, ts=ts)
            return  # developer/system instructions; enveloped user turns come as events
        if kind == "reasoning":
            summary = item.get("summary")
            if isinstance(summary, list):
                text = "\n".join(s.get("text", "") for s in summary if isinstance(s, dict))
                if text:
                    self._buffer(ts)["thinking"].append(text)
            return
        if kind in ("function_call", "custom_tool_call"):
            call_id = need(item.get("call_id") or item.get("id"), str, "call_id")
            name = str(item.get("name", "tool"))
            if kind == "function_call":
                raw = item.get("arguments")
                try:
                    args = loads_bounded(raw) if isinstance(raw, str) else raw
                except ValueError:  # not JSON, or nested too deep to keep as it is
                    args = {"arguments": raw}
                if not isinstance(args, dict):
                    args = {"arguments": args}
            else:
                args = {"input": item.get("input")}
            self._buffer(ts)
            self._pending[call_id] = {"name": name, "input": args, "ts": ts}
            return
        if kind in ("function_call_output", "custom_tool_call_output"):
            await self.flush()
            call_id = need(item.get("call_id"), str, "call_id")
            await self._result(call_id, item.get("output"), ts)
            return
        if kind in _QUIET_ITEMS:
            return
        raise BadRecord(f"unknown response item {kind!r}")

    def _buffer(self, ts: float) -> dict[str, Any]:
        if self._msg is None:
            self._msg = {"ts": ts, "text": [], "thinking": []}
        return self._msg

    async def flush(self) -> None:
        m, self._msg = self._msg, None
        if m is None:
            return
        if m.get("provisional"):  # stored at the end of the last read: this replaces it
            await self.hub.writer.delete_message(self.hub.main.id, m["provisional"])
        data: dict[str, Any] = {}
        if self._model:
            data["model"] = self._model
        if m["thinking"]:
            data["thinking"] = "\n\n".join(m["thinking"])
        if self._usage is not None:
            data["usage"], self._usage = self._usage, None
        await self.hub.main.message("assistant", "\n\n".join(t for t in m["text"] if t),
                                    ts=m["ts"], data=data)  # fmt: skip

    # Events

    async def _event(self, ev: dict[str, Any], ts: float) -> None:
        kind = ev.get("type")
        if kind == "user_message":
            await self.flush()
            text = ev.get("message")
            data = {"images": len(ev["images"])} if isinstance(ev.get("images"), list) and \
                ev["images"] else None  # fmt: skip
            await self.hub.main.message("user", text if isinstance(text, str) else "", ts=ts,
                                        data=data)  # fmt: skip
        elif kind == "token_count":
            info = ev.get("info")
            if not isinstance(info, dict):
                return
            total = info.get("total_token_usage")
            if total == self._total:
                return  # the same call reported again (rate limits moved)
            self._total = total
            self._usage = codex_usage(info.get("last_token_usage"))
            if self._msg is not None:
                await self.flush()
        elif kind in ("task_complete", "turn_aborted"):
            await self.flush()
            if self._usage is not None:  # usage of a call whose response had nothing to show
                self._buffer(ts)
                await self.flush()
        # every other event mirrors response items or is UI state (FORMATS.md 2.4)

    # Tool results

    async def _result(self, call_id: str, output: Any, ts: float) -> None:
        call = self._pending.pop(call_id, None) or {"name": "unknown", "input": {}}
        if await self._live.stored(call_id):
            return
        name, args = call["name"], call["input"]
        text, exit_code = _output_text(output)
        seen = len(output) if isinstance(output, str) else len(text)
        ref = CallRef(call_ref=call_id, seen=seen, ts=ts)
        main = self.hub.main
        patch = _patch_of(name, args)
        if patch is not None:
            await self._patch(main, name, args, patch, text, exit_code, ref)
            return
        script = _script(name, args)
        if script is None:
            await main.generic(name, args, text, **ref)
            return
        tool = _search_tool(script)
        if tool and exit_code in (0, None):
            await main.search(tool, args, text, **ref)
            return
        read = _read_of(script)
        if read and exit_code in (0, None) and not _TRUNCATED.match(text):
            path, first, numbered = read
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if numbered:
                if not all(_NL_LINE.match(line) for line in lines):
                    lines = []
                    first = 0  # not nl's output after all: a plain result
                lines = [line.split("\t", 1)[1] for line in lines]
            if lines or first == 1:
                await main.read({"path": path, "command": script}, path, first, lines, None, **ref)
                return
        await main.generic("bash", args, text, **ref)

    async def _patch(self, main: Replay, name: str, args: dict[str, Any], patch: str, text: str,
                     exit_code: int | None, ref: CallRef) -> None:  # fmt: skip
        try:
            ops = patch_tool.parse(patch)
        except ToolError:
            ops = []
        paths = tuple(p for op in ops for p in (op.path, op.move_to) if p)
        failed = exit_code not in (0, None) or text.lower().startswith(("error", "failed"))
        if ops and not failed and all(op.kind == "add" for op in ops):
            await main.edit("apply_patch", {"patch": patch},
                            [(op.path, None, op.content) for op in ops], **ref)  # fmt: skip
            return
        # An update's old content is not in the transcript: the patch text stands for the diff.
        await main.generic("apply_patch", {"patch": patch} if name != "shell" else args,
                           patch if not failed else text,
                           changes=paths if not failed else (), **ref)  # fmt: skip


_ITEM_TYPES = frozenset({"message", "reasoning", "function_call", "function_call_output",
                         "custom_tool_call", "custom_tool_call_output"}) | _QUIET_ITEMS  # fmt: skip


def _output_text(output: Any) -> tuple[str, int | None]:
    """The text of a tool output and its exit code: 0.58 wraps it as a JSON string
    `{"output": ..., "metadata": {"exit_code": ...}}`; later builds send plain text."""
    if isinstance(output, str):
        if output.startswith("{"):
            try:
                parsed = json.loads(output)
            except (ValueError, RecursionError):
                return output, None
            if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
                meta = parsed.get("metadata")
                code = meta.get("exit_code") if isinstance(meta, dict) else None
                return parsed["output"], code if isinstance(code, int) else None
        return _plain_output(output)
    if isinstance(output, dict | list):
        content = output.get("content") if isinstance(output, dict) else output
        return block_text(content) if content is not None else json.dumps(output), None
    return "" if output is None else str(output), None


_HEADER = re.compile(
    r"^(?:Chunk ID|Wall time|Process exited with code|Exit code|"
    r"Original token count|Process running with session ID|Total output lines)\b"
)
_CODE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)", re.M)


def _plain_output(output: str) -> tuple[str, int | None]:
    """Newer builds put `Exit code`/`Wall time`/... lines above `Output:`; the wall time differs
    every run, so the header is left out of the text (the same search twice is then the same
    text) and a non-zero exit code is said as the engine's bash says it."""
    head, sep, body = output.partition("Output:\n")
    m = _CODE.search(head) if sep else None
    code = int(m.group(1)) if m else None
    if not sep or not all(_HEADER.match(line) for line in head.splitlines() if line.strip()):
        m = _CODE.search(output)
        return output, int(m.group(1)) if m else None
    if code:
        body = f"{body.rstrip(chr(10))}\nExit code {code}." if body else f"Exit code {code}."
    return body, code


def _patch_of(name: str, args: dict[str, Any]) -> str | None:
    if name == "apply_patch":
        value = args.get("input", args.get("patch"))
        return value if isinstance(value, str) else None
    cmd = args.get("command")
    if name == "shell" and isinstance(cmd, list) and len(cmd) >= 2 and cmd[0] == "apply_patch":
        return cmd[1] if isinstance(cmd[1], str) else None
    return None


def _script(name: str, args: dict[str, Any]) -> str | None:
    """The shell script a call ran, or None when it is not a shell call."""
    if name == "shell" or name == "local_shell":
        cmd = args.get("command")
        if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd):
            if len(cmd) == 3 and cmd[0].rsplit("/", 1)[-1] in _SHELLS and cmd[1] in ("-lc", "-c"):
                script: str = cmd[2]  # all str, checked above
                return script
            return shlex.join(cmd)
        return cmd if isinstance(cmd, str) else None
    if name in ("exec_command", "shell_command"):
        cmd = args.get("cmd", args.get("command"))
        return cmd if isinstance(cmd, str) else None
    return None


def _simple(script: str) -> list[str] | None:
    """The words of a script that is one plain command (no pipes, lists or redirections)."""
    if any(ch in script for ch in "|;&<>`$\n"):
        return None
    try:
        return shlex.split(script)
    except ValueError:
        return None


def _search_tool(script: str) -> str | None:
    words = _simple(script)
    if not words:
        return None
    head = words[0]
    if (head == "rg" and "--files" in words) or head in ("find", "fd"):
        return "glob"
    if head in ("rg", "grep", "ag"):
        return "grep"
    if head in ("ls", "tree"):
        return "list"
    return None


_NL_SED = re.compile(r"^nl -ba (\S+) \| sed -n '?(\d+),(\d+)p'?$")
_NL_LINE = re.compile(r"^ *\d+\t")


def _read_of(script: str) -> tuple[str, int, bool] | None:
    """(path, first line, numbered by `nl`) of `sed -n 'a,bp' FILE`, `nl -ba FILE | sed -n
    'a,bp'`, `head -n N FILE` or `cat FILE`: the ways Codex reads a file."""
    script = script.strip()
    m = _NL_SED.match(script)
    if m:
        words = _simple(m.group(1))
        first = whole(int(m.group(2)))
        return (words[0], first, True) if words and first is not None else None
    m = _SED.match(script)
    if m:
        words = _simple(script)
        first = whole(int(m.group(1)))
        return (words[-1], first, False) if words and first is not None else None
    words = _simple(script)
    if words and words[0] == "cat" and len(words) == 2 and not words[1].startswith("-"):
        return words[1], 1, False
    if words and words[0] == "head" and len(words) == 4 and words[1] == "-n" and words[2].isdigit():
        return words[3], 1, False
    return None


def source_ids(rec: Any) -> dict[str, Any] | None:
    """The session id, cwd and start a Codex first line gives (enveloped or legacy)."""
    if not isinstance(rec, dict):
        return None
    if rec.get("type") == "session_meta" and isinstance(rec.get("payload"), dict):
        p = rec["payload"]
        if isinstance(p.get("id"), str):
            return {"session": p["id"], "cwd": path_text(p.get("cwd")), "ts": p.get("timestamp") or
                    rec.get("timestamp"), "version": p.get("cli_version"), "legacy": False}  # fmt: skip
    if "type" not in rec and isinstance(rec.get("id"), str) and "timestamp" in rec:
        return {"session": rec["id"], "cwd": None, "ts": rec.get("timestamp"), "version": None,
                "legacy": True}  # fmt: skip
    return None
