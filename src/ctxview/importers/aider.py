"""aider's `.aider.chat.history.md` (FORMATS.md 11): one Markdown file beside the repository,
appended to by every session (`# aider chat started at <time>`), each imported as a ctxview
session `ai-<start time>-<hash of the file's path>` (importers/documents.py splits the file and
feeds each block here). Import only: aider has no hooks, so the rules here are a replay of its
log, not what the model saw (aider sends the files added to the chat whole, which the log
does not hold).

Blocks: `#### ` lines are what the person typed, `> ` lines aider's own output, the rest the
model's reply. What aider ran and gave the model goes through the rules: `/run` and `/test`
commands with the output that follows them are bash results (aider 0.86 writes no output there,
only its question and "Added N lines of output to the chat.": no result then); an edit block
(`<<<<<<< SEARCH` ... `>>>>>>> REPLACE`, or a whole file) that aider reports `Applied edit to
<file>` is an edit of that file (its text stored as the model wrote it: the file itself is not
in the log). `Tokens:
12k sent, 839 received` lines are kept on aider's message as they are (rounded, not counts).
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from ctxview.importers.agent_tools import Other, SimpleParser, put_result
from ctxview.importers.common import BadRecord, need

if TYPE_CHECKING:
    from ctxview.importers.hub import Hub

_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$", re.M)
_RUN = re.compile(r"^/(run|test)\s+(.+)$", re.S)
# aider's own lines after a command's output: whether to add it to the chat, and that it did.
_ASKED = re.compile(r"^(Add (the|[\d.]+k? tokens of command) output to the chat\?.*"
                    r"|Added \d+ lines? of output to the chat\.)$")  # fmt: skip


def blocks(lines: list[str]) -> list[dict[str, str]]:
    """One session's lines as blocks: {"kind": user|aider|model, "text": ...}, in order."""
    out: list[dict[str, str]] = []
    for raw in lines:
        line = raw.rstrip("\r")
        if line.startswith("#### ") or line == "####":
            kind, text = "user", line[5:].rstrip()
        elif line.startswith("> ") or line == ">":
            kind, text = "aider", line[2:].rstrip()
        else:
            kind, text = "model", line
        if out and out[-1]["kind"] == kind:
            out[-1]["text"] += "\n" + text
        else:
            out.append({"kind": kind, "text": text})
    for b in out:
        b["text"] = b["text"].strip("\n")
    return [b for b in out if b["text"].strip()]


def _run_output(text: str) -> tuple[str, str]:
    """A `/run` block as (the command's output, aider's own lines after it). aider 0.86 writes
    only its question and "Added N lines of output to the chat." (the output went to the terminal
    and the model, not the log): then there is no output to replay."""
    lines = text.split("\n")
    n = len(lines)
    while n > 0 and _ASKED.match(lines[n - 1].strip()):
        n -= 1
    return "\n".join(lines[:n]).strip("\n"), "\n".join(lines[n:])


class AiderParser(SimpleParser):
    def __init__(self, hub: Hub, state: dict[str, Any]) -> None:
        self.hub = hub
        self._run: dict[str, str] | None = state.get("run")  # a /run waiting for its output
        self._edit: str | None = state.get("edit")  # the model's last reply (its edit blocks)
        self.quiet: dict[str, int] = {}

    def state(self) -> dict[str, Any]:
        return {"run": self._run, "edit": self._edit}

    async def feed(self, rec: Any, lineno: int) -> None:
        need(rec, dict, "the block")
        kind = need(rec.get("kind"), str, "kind")
        text = need(rec.get("text"), str, "text")
        main = self.hub.main
        ts = self.hub.last_ts  # aider writes a time only at a session's start
        ref = f"ai:{lineno}:{hashlib.sha1(text.encode('utf-8', 'replace')).hexdigest()[:8]}"
        if kind == "user":
            m = _RUN.match(text.strip())
            self._run = {"tool": m.group(1), "command": m.group(2).strip()} if m else None
            await main.message("user", text, ts=ts)
        elif kind == "model":
            self._run = None
            self._edit = text if ("<<<<<<< SEARCH" in text or "```" in text) else None
            await main.message("assistant", text, ts=ts)
        elif kind == "aider":
            if self._run is not None:
                run, self._run = self._run, None
                output, asked = _run_output(text)
                if output:
                    await put_result(main, Other("bash"), {"command": run["command"],
                                                           "via": f"/{run['tool']}"}, output,
                                     call_ref=ref, seen=len(output), ts=ts)  # fmt: skip
                if asked:
                    await main.message("system", asked, ts=ts, data={"subtype": "aider"})
                return
            applied = _APPLIED.findall(text)
            if applied and self._edit is not None:
                edit, self._edit = self._edit, None
                await put_result(main, Other("edit", tuple(applied)), {"paths": applied}, edit,
                                 call_ref=ref, seen=len(edit), ts=ts)  # fmt: skip
            await main.message("system", text, ts=ts, data={"subtype": "aider"})
        else:
            raise BadRecord(f"unknown block kind {kind!r}")
