"""The tools the engine runs itself (read, write, edit, multiedit, apply_patch, list, glob,
grep, bash, recall): arguments checked, run in the workspace (src/ctxview/tools/), the output
made into a result by the rules (`RuleResults`). A tool's failure raises `ToolError`, which
the session answers with its sentence."""

from __future__ import annotations

import hashlib
from typing import Any

from ctxview.engine import edits
from ctxview.engine.edits import EDIT_TOOLS
from ctxview.engine.result import Result
from ctxview.engine.rule_results import RuleResults
from ctxview.rules import brackets
from ctxview.rules import elide as elide_rules
from ctxview.rules.ids import parse_id
from ctxview.rules.lines import decode, looks_binary, split_lines, window_lines
from ctxview.store.writer import Writer
from ctxview.tools import ToolError
from ctxview.tools import bash as bash_tool
from ctxview.tools import search as search_tool
from ctxview.tools.workspace import Workspace, path_arg


class OwnTools:
    """One session's tools, over its workspace; the processes a `bash` call left running in the
    background, until `stop_background`."""

    def __init__(self, results: RuleResults, workspace: Workspace, writer: Writer,
                 session_id: str) -> None:  # fmt: skip
        self.results = results
        self.workspace = workspace
        self.writer = writer
        self.session_id = session_id
        self.config = results.config
        self.jobs: list[bash_tool.Job] = []  # bash calls run with background

    async def stop_background(self) -> None:
        """End every process a `bash` call with `background` left running."""
        jobs, self.jobs = self.jobs, []
        for job in jobs:
            await job.stop()

    async def run(self, tool: str, args: dict[str, Any]) -> Result:
        if tool == "read":
            return self._read(args)
        if tool in EDIT_TOOLS:
            return self._edit(tool, args)
        if tool in ("list", "glob", "grep"):
            return self.results.by_result(tool, args, await self._search(tool, args))
        if tool == "bash":
            return await self._bash(args)
        if tool == "recall":
            return await self._recall(args)
        raise ToolError("error.unknown_tool", tool=tool)

    def _read(self, args: dict[str, Any]) -> Result:
        given = args.get("path", args.get("file_path"))
        offset = _whole(args.get("offset", 1), "offset")
        window = self.config["window.lines"]
        limit = min(_whole(args.get("limit", window), "limit"), window)
        path = path_arg(given)  # after offset and limit: their errors come first, as they did
        key, data = self.workspace.read_bytes(path)
        sha = hashlib.sha256(data).hexdigest()
        if looks_binary(data):
            rid = self.results.take_id()
            sentence = self.config.text("text.binary", size=len(data))
            sha8 = sha[: self.config["sha_digits"]]
            bracket = brackets.read_binary(self.results.ref(rid), path, sha8)
            return Result(rid, "read", brackets.with_sentence(bracket, sentence), sentence,
                          "binary", path=path, sha=sha, data={"key": key, "own": True})  # fmt: skip
        lines, total = window_lines(data, offset, limit)  # only the window is decoded
        if (total == 0 and offset > 1) or (total > 0 and offset > total):
            raise ToolError("error.offset_past_end", offset=offset, path=path, n=total)
        return self.results.read_result(path, key, offset, lines, total, sha, own=True)

    # list, glob, grep

    async def _search(self, tool: str, args: dict[str, Any]) -> str:
        """In a worker process, within `search.timeout_seconds` (src/ctxview/tools/search.py)."""
        return await search_tool.search(self.workspace, tool, args,
                                        float(self.config["search.timeout_seconds"]),
                                        self.config["text.search_stopped"])  # fmt: skip

    # bash

    async def _bash(self, args: dict[str, Any]) -> Result:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError("error.bad_args", detail="command must be a non-empty string")
        timeout = args.get("timeout", self.config["bash.timeout_seconds"])
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ToolError("error.bad_args", detail="timeout must be a positive number of seconds")
        background = args.get("background", False)
        if not isinstance(background, bool):
            raise ToolError("error.bad_args", detail="background must be true or false")
        done = await bash_tool.run(command, self.workspace.root, float(timeout), background)
        output = decode(done.output)
        tails = []
        if done.timed_out:
            tails.append(self.config.text("text.timed_out", seconds=f"{timeout:g}"))
        elif done.exit_code:
            tails.append(self.config.text("text.exit_code", code=done.exit_code))
        if done.ended:
            tails.append(self.config.text("text.ended_left_running",
                                          processes=", ".join(done.ended)))  # fmt: skip
        data: dict[str, Any] = {"exit_code": done.exit_code, "timed_out": done.timed_out}
        if done.job is not None:
            self.jobs.append(done.job)
            running = ", ".join(f"{name} (pid {pid})" for pid, name in done.job.processes)
            tails.append(self.config.text("text.background", processes=running,
                                          log=done.job.log))  # fmt: skip
            data["background"] = [{"pid": pid, "command": name}
                                  for pid, name in done.job.processes]  # fmt: skip
            data["log"] = done.job.log
        if done.ended:
            data["ended"] = done.ended
        if tails:
            tail = "\n".join(tails)
            output = f"{output.rstrip(chr(10))}\n{tail}" if output else tail
        result = self.results.generic("bash", output)
        result.data = data
        return result

    # recall

    async def _recall(self, args: dict[str, Any]) -> Result:
        """§4: a stored result again, in full, a window of lines; never capped or deduplicated."""
        given = str(args.get("id", "")).strip()
        if not given.lstrip("#"):
            raise ToolError("error.bad_args", detail="id must be a result id such as #1a2b")
        offset = _whole(args.get("offset", 1), "offset")
        window = self.config["window.lines"]
        limit = min(_whole(args.get("limit", window), "limit"), window)
        target = parse_id(given)
        # The id may be a sub-agent's or its parent's: one id space per tree, the session's
        # own result first (a store from before ids were shared may have it twice).
        stored = (
            await self.writer.tree_stored_data(self.session_id, target)
            if target is not None
            and (target < self.results.ids.next or elide_rules.is_content_id(target))
            else None
        )
        if stored is None:
            rid = self.results.take_id()
            sentence = self.config.text("text.no_result", ref="#" + given.lstrip("#").lower())
            return Result(rid, "recall", brackets.with_sentence(brackets.plain(self.results.ref(rid)),
                          sentence), sentence, "error")  # fmt: skip
        assert target is not None
        if isinstance(stored, bytes):  # a body written in pieces: decode only the window
            lines, total = window_lines(stored, offset, limit)
        else:
            every = split_lines(stored)
            lines, total = every[offset - 1 : offset - 1 + limit], len(every)
        if (total == 0 and offset > 1) or (total > 0 and offset > total):
            raise ToolError("error.recall_offset_past_end", offset=offset, ref=self.results.ref(target),
                            n=total)  # fmt: skip
        rid = self.results.take_id()
        ref, tref = self.results.ref(rid), self.results.ref(target)
        if total == 0:
            return Result(rid, "recall", brackets.recall_empty(ref, tref), "", "recall",
                          points_to=target)  # fmt: skip
        last = min(total, offset + limit - 1)
        body = "\n".join(lines)
        return Result(rid, "recall", brackets.with_body(brackets.recall(ref, tref, offset, last,
                      total), body), body, "recall", points_to=target,
                      line_from=offset, line_to=last, line_total=total)  # fmt: skip

    # write, edit, multiedit, apply_patch (src/ctxview/engine/edits.py)

    def _edit(self, tool: str, args: dict[str, Any]) -> Result:
        changes = edits.changes_for(tool, args, self.workspace)
        notes = edits.outside_notes(changes, self.results.known, self.config)
        edits.commit(changes, self.workspace)  # all checks passed: now the workspace changes
        return self.results.edit_result(tool, changes, notes)


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError("error.bad_args", detail=f"{name} must be a whole number from 1")
    return value
