"""A source session's tool calls replayed through the engine, so each result gets an id, is stored
in full, and gets beside what the agent really got (`seen`) the text 3.0.0 would have shown.

Reads. The transcript holds the lines a read returned, their range and (Claude Code) the file's
length, but not the file's bytes, so the sha given to the engine is a stand-in: SHA-256 of
`path, generation, total lines`. The generation of a path goes up when the transcript edits,
writes or patches it, when a re-read reports another length, and when a re-read shows a line that
differs from the same line seen earlier in this generation (the file changed outside the session).
So two reads get the same sha exactly when nothing the transcript knows says the file changed,
and the engine's own §2 rule decides the stub. Lines seen are kept as CRC-32s in the session's
state, so an import resumed mid-file (after a kill, or a file that grew) decides as one import of
the whole file does.

In a hooked session (its host answers calls live, hashing a read by the file's own bytes) an
import stores only the calls the host missed, whose output the model got whole from the agent:
such a read is stored in full and kept out of the dedupe table (`insert_read(whole=True)`), so
its stand-in neither stubs nor is stubbed, and gives no files-read row; a search or any
other result is never the same-result stub nor compared with (`insert(whole=True)`). Its key is the engine's,
so the session's live calls on the file and the replay's are about one file.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import zlib
from collections.abc import Callable
from typing import Any, TypedDict

from ctxview.engine.session import Session
from ctxview.tools.workspace import Workspace

SEARCH_TOOLS = frozenset({"grep", "glob", "list"})


class CallRef(TypedDict):
    """Where a result came from: the keyword arguments every insert below takes."""

    call_ref: str
    seen: int
    ts: float


# Claude Code's numbered read output: `    12→text` (a tab in some builds).
_NUMBERED = re.compile(r"^ *(\d+)(?:→|\t)(.*)$")
_REMINDER = "<system-reminder>"


def numbered_lines(text: str) -> tuple[int, list[str]] | None:
    """The first line number and the lines of a numbered read result, or None when it is not one."""
    cut = text.find(_REMINDER)
    if cut >= 0:
        text = text[:cut]
    first: int | None = None
    lines: list[str] = []
    for raw in text.split("\n"):
        m = _NUMBERED.match(raw)
        if m is None:
            if raw.strip():
                return None
            continue
        n = int(m.group(1))
        if first is None:
            first = n
        elif n != first + len(lines):
            return None
        lines.append(m.group(2))
    return (first, lines) if first is not None else None


def _crc(line: str) -> int:
    return zlib.crc32(line.encode("utf-8", "surrogatepass"))


class Replay:
    """One ctxview session being filled from a source: the engine's Session, plus what the
    transcript has told about each path. `data` is the session's data JSON, kept whole."""

    def __init__(self, session: Session, cwd: str, data: dict[str, Any], *,
                 live: bool = False) -> None:  # fmt: skip
        """`live`: the host answers its calls through this replay (Gemini's engine), rather
        than an import storing what a hooked session's host did not answer."""
        self.session = session
        self.cwd = cwd or "/"
        self.data = data
        state = data.setdefault("replay", {})
        self._gen: dict[str, int] = state.setdefault("gen", {})
        self._total: dict[str, int] = state.setdefault("total", {})
        # path -> {line number (a str: JSON's keys) -> CRC-32 of the line seen there}
        self._seen_lines: dict[str, dict[str, int]] = state.setdefault("lines", {})
        self.title: str | None = None  # a new title to write with the state
        self._keys: dict[str, str] = {}  # path -> the engine's key (`key`), under _workspace
        self._workspace: tuple[str, Workspace] | None = None
        # A hooked session's host answered its calls live; what an import stores there is a
        # call the host missed, whose output the model got whole from the agent.
        self._missed = bool(data.get("hooked")) and not live

    @property
    def id(self) -> str:
        return self.session.id

    def key(self, path: str) -> str:
        """A path as the engine compares it (`Workspace.key`), the one a host's live call gives
        the same file: relative inside the source's cwd (the session's workspace; the cwd may be
        learnt after the session was made, `runner._identify_again`)."""
        if self._workspace is None or self._workspace[0] != self.cwd:
            self._workspace = (self.cwd, Workspace(self.cwd))
            self._keys.clear()
        key = self._keys.get(path)
        if key is None:
            key = self._keys[path] = self._workspace[1].key(self._place(path))
        return key

    def _place(self, path: str) -> str:
        """A path as the replay's own state names it (and its stand-in hashes it): absolute,
        normalised, against the source's cwd."""
        joined = path if path.startswith("/") else posixpath.join(self.cwd, path)
        return posixpath.normpath(joined)

    def changed(self, path: str) -> None:
        """The transcript changed the file at `path`: later reads of it are of new content."""
        key = self._place(path)
        self._gen[key] = self._gen.get(key, 0) + 1
        self._total.pop(key, None)
        self._seen_lines.pop(key, None)

    # Inserting

    async def read(self, args: dict[str, Any], path: str, first: int, lines: list[str],
                   total: int | None, *, call_ref: str, seen: int, ts: float,
                   maybe_one_less: bool = False) -> str:  # fmt: skip
        """`maybe_one_less`: `total` is a guess that may be one more than the file's length
        (Claude Code's count of a read short of the end, `claude_code.read_lines`); a length
        known from an earlier read of this generation wins."""
        key = self._place(path)
        last = first + len(lines) - 1
        known_total = self._total.get(key)
        if total is None:  # a numbered result alone does not give the file's length
            total = max(last, known_total or 0)
        elif maybe_one_less and known_total == total + 1:
            total = known_total
        seen_lines = self._seen_lines.setdefault(key, {})
        differs = known_total is not None and known_total != total
        crcs = [_crc(line) for line in lines]
        if not differs:
            for i, crc in enumerate(crcs):
                old = seen_lines.get(str(first + i))
                if old is not None and old != crc:
                    differs = True
                    break
        if differs:
            self.changed(path)
            seen_lines = self._seen_lines.setdefault(key, {})
        self._total[key] = total
        for i, crc in enumerate(crcs):
            seen_lines[str(first + i)] = crc
        gen = self._gen.get(key, 0)
        sha = hashlib.sha256(f"ctxview-import\0{key}\0{gen}\0{total}".encode()).hexdigest()
        if total == 0:
            first = 1
        return await self.session.insert_read(args, path, self.key(path), first, lines, total,
                                              sha, call_ref=call_ref, seen=seen, ts=ts,
                                              whole=self._missed)  # fmt: skip

    async def search(self, tool: str, args: dict[str, Any], output: str, *, call_ref: str,
                     seen: int, ts: float) -> str:  # fmt: skip
        """grep, glob, list: the engine's same-result rule compares arguments and text (not for a
        call the host missed, whose output the model got whole)."""
        return await self.session.insert(tool, args, output, call_ref=call_ref, seen=seen, ts=ts,
                                         whole=self._missed)  # fmt: skip

    async def edit(self, tool: str, args: dict[str, Any],
                   files: list[tuple[str, str | None, str | None]], *, call_ref: str, seen: int,
                   ts: float) -> str:  # fmt: skip
        """An edit whose old and new content are known: the engine answers with the diff."""
        for path, _, _ in files:
            self.changed(path)
        changes = [(path, self.key(path), old, new) for path, old, new in files]
        return await self.session.insert_edit(tool, args, changes, call_ref=call_ref, seen=seen,
                                              ts=ts)  # fmt: skip

    async def generic(self, tool: str, args: dict[str, Any], output: str, *, call_ref: str,
                      seen: int, ts: float, changes: tuple[str, ...] = ()) -> str:  # fmt: skip
        """Anything else: an id, stored in full, capped. `changes` are paths it modified."""
        for path in changes:
            self.changed(path)
        return await self.session.insert(tool, args, output, call_ref=call_ref, seen=seen, ts=ts,
                                         whole=self._missed)  # fmt: skip

    async def beside(self, tool: str, args: dict[str, Any], output: str,
                     line: Callable[[str], str], *, call_ref: str, seen: int,
                     ts: float) -> str:  # fmt: skip
        """An output the model keeps in the host's own form, its id given beside it
        (`Session.insert_beside`)."""
        return await self.session.insert_beside(tool, args, output, line, call_ref=call_ref,
                                                seen=seen, ts=ts)  # fmt: skip

    async def message(self, role: str, text: str, *, ts: float,
                      data: dict[str, Any] | None = None) -> None:  # fmt: skip
        if role == "user" and not (data or {}).get("meta") and "prompt" not in self.data:
            self.prompted(text)
        await self.session.message(role, text, ts=ts, data=data)

    def prompted(self, text: str) -> None:
        """The first thing the person typed names the session, unless the source titles it."""
        first = text.strip().split("\n", 1)[0].strip()
        if not first or first.startswith(("<", "[Request interrupted")):
            return  # slash-command markup, injected context, an interruption: not a prompt
        self.data["prompt"] = text[:500]
        if self.title is None and not self.data.get("titled"):
            self.title = _title(first, 80)

    def titled(self, title: str) -> None:
        """A title the source gives (Claude Code's summary, custom-title, ai-title)."""
        self.title = title
        self.data["titled"] = True

    async def compact(self, summary: str, *, ts: float, data: dict[str, Any] | None = None) -> None:
        await self.session.compact(summary, ts=ts, data=data)


def _title(line: str, limit: int) -> str:
    """A prompt's first line as a title: whole when it fits, else cut after its last whole word
    that fits, with an ellipsis (a cut mid-word read as a typo)."""
    if len(line) <= limit:
        return line
    space = line.rfind(" ", 0, limit)
    end = space if space >= limit // 2 else limit - 1
    return line[:end].rstrip() + "…"
