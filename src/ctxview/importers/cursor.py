"""Cursor CLI agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl`,
FORMATS.md 8) into a ctxview session `cu-<id>` (the file's name: the lines carry no ids, no
times, no usage). Import only: Cursor's hooks cannot replace a result, so the rules here are a
replay, not what the model saw.

Lines `{role, message: {content: [...]}}` with Anthropic-style blocks; a `tool_use` without an id
gets `cu:<line>:<n>`, and a `tool_result` is paired by its `tool_use_id`, else with the oldest
call still open. A person's text comes wrapped in `<user_query>`, unwrapped here. Sub-agents
are files of their own in `<id>/subagents/`, imported as sessions linked to their parent's
session (and to its `Agent`/`Task` call whose prompt their first line repeats).

Tools: `Read` (`path`/`file_path`/`target_file`) is a read (plain or `N|`-numbered lines); `Grep`,
`Glob`, `LS` are grep, glob and list; `StrReplace`/`Edit`/`Write`/`Delete` change their path;
`Shell`/`Bash` are bash; the rest is capped.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from ctxview.importers.agent_tools import (
    How,
    Other,
    Read,
    Search,
    SimpleParser,
    numbered,
    path_arg,
    put_result,
    text_lines,
)
from ctxview.importers.common import block_text, id_text, need
from ctxview.importers.replay import numbered_lines
from ctxview.importers.source_ids import named_by_file, session_id

if TYPE_CHECKING:
    from ctxview.importers.hub import Hub

_SEARCH = {"grep": "grep", "grep_search": "grep", "codebase_search": "grep", "glob": "glob",
           "glob_file_search": "glob", "ls": "list", "list_dir": "list"}  # fmt: skip
_CHANGES = ("strreplace", "str_replace", "edit", "edit_file", "write", "search_replace",
            "delete", "delete_file", "multiedit")  # fmt: skip
_SHELLS = ("shell", "bash", "run_terminal_cmd", "terminal")
_READS = ("read", "read_file")
_AGENTS = ("agent", "task")
_PIPE = re.compile(r"^ *(\d+)\|(.*)$")
_QUERY = re.compile(r"\A\s*<user_query>\s*(.*?)\s*</user_query>\s*\Z", re.S)


class CursorParser(SimpleParser):
    def __init__(self, hub: Hub, state: dict[str, Any]) -> None:
        self.hub = hub
        self._pending: dict[str, dict[str, Any]] = state.get("pending", {})
        self._linked: bool = state.get("linked", False)
        self.quiet: dict[str, int] = {}

    def state(self) -> dict[str, Any]:
        return {"pending": self._pending, "linked": self._linked}

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the record")
        if "role" not in rec and isinstance(rec.get("type"), str):
            self.skip(rec["type"])  # turn_ended and other markers
            return
        role = need(rec.get("role"), str, "role")
        msg = need(rec.get("message"), dict, "message")
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        need(content, list, "message.content")
        ts = self.hub.last_ts  # Cursor writes no times: the file's own stands for them all
        main = self.hub.main
        if role == "user":
            said = [
                b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")
            ]
            if said:
                text = block_text(said)
                m = _QUERY.match(text)
                text = m.group(1) if m else text
                if not self._linked:
                    self._linked = True
                    await self._link(text)
                await main.message("user", text, ts=ts)
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    await self._result(block, ts)
        elif role == "assistant":
            texts, thinking = [], []
            for n, block in enumerate(content):
                need(block, dict, "a content block")
                btype = block.get("type")
                if btype == "text":
                    texts.append(str(block.get("text", "")))
                elif btype == "thinking":
                    thinking.append(str(block.get("thinking", "")))
                elif btype == "tool_use":
                    cid = id_text(block.get("id")) or f"cu:{lineno}:{n}"
                    args = block.get("input")
                    self._pending[cid] = {"name": str(block.get("name") or "tool"),
                                          "input": args if isinstance(args, dict) else
                                          {"input": args}}  # fmt: skip
            data = {"thinking": "\n\n".join(thinking)} if thinking else None
            await main.message("assistant", "\n\n".join(t for t in texts if t), ts=ts, data=data)
            for cid, call in self._pending.items():
                if call["name"].lower() in _AGENTS and isinstance(call["input"].get("prompt"), str):
                    key = _prompt_key(call["input"]["prompt"])
                    main.data.setdefault("agents", {}).setdefault(key, cid)
        else:
            self.skip(f"role {role}")

    async def _link(self, prompt: str) -> None:
        """A sub-agent's file (`<parent>/subagents/<child>.jsonl`): its session goes under the
        parent's, and under the parent's Agent call with this prompt when there is one."""
        path = self.hub.path
        if path.parent.name != "subagents":
            return
        folder = path.parent.parent
        files = sorted(folder.glob("*.jsonl"))
        parent = next((f for f in files if f.stem == folder.name), files[0] if files else None)
        if parent is None:
            return
        pid = session_id("cursor", named_by_file(parent))
        info = await self.hub.writer.session_info(pid)
        if info is None:
            return
        agents = json.loads(info["data"] or "{}").get("agents", {})
        await self.hub.writer.update_session(self.hub.main.id, parent_session=pid,
                                             parent_call=agents.get(_prompt_key(prompt)))  # fmt: skip

    async def _result(self, block: dict[str, Any], ts: float) -> None:
        cid = id_text(block.get("tool_use_id"))
        if cid not in self._pending:
            cid = next(iter(self._pending), cid)  # Cursor's calls carry no ids: in order
        call = self._pending.pop(cid, None) if cid else None
        call = call or {"name": "unknown", "input": {}}
        text = block_text(block.get("content"))
        how = _how(call["name"], call["input"], text, bool(block.get("is_error")))
        await put_result(self.hub.main, how, call["input"], text,
                         call_ref=cid or f"cu:{hashlib.sha1(text.encode()).hexdigest()[:8]}",
                         seen=len(text), ts=ts)  # fmt: skip


def _prompt_key(prompt: str) -> str:
    return hashlib.sha256(prompt.strip().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _how(name: str, args: dict[str, Any], text: str, error: bool) -> How:
    low = name.lower()
    path = path_arg(args, "path", "file_path", "target_file")
    if not error:
        if low in _READS and path:
            found = numbered_lines(text) or numbered(text, _PIPE)
            if found is not None:
                return Read(path, found[0], found[1], None)
            return Read(path, 1, text_lines(text), None)
        if low in _SEARCH:
            return Search(_SEARCH[low])
    changes = (path,) if low in _CHANGES and path and not error else ()
    return Other("bash" if low in _SHELLS else name, changes)


def source_ids(rec: Any) -> dict[str, Any] | None:
    return None  # no line names its session: the file's name does (source_ids.named_by_file)
