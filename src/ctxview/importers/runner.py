"""One source file imported into the store, from where the last import stopped.

A `FileImporter` reads the lines added since its byte offset, feeds them to the format's parser
and saves where it stopped (byte offset, line count, the file's identity, the parser's pending
state) in the main session's `data`, in the same transaction as the rows those lines made (one
about every `COMMIT_SECONDS`), so a second import of an unchanged file adds nothing, an appended
file adds only its new lines, an import killed at any moment carries on exactly, and `follow`
keeps one importer across polls. Session ids are deterministic: `cc-<sessionId>`,
`cc-<agentId>` for a sub-agent file, `cx-<id>` for Codex (plus `-<hash of the path>` when
another file already holds that id).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ctxview.engine.session import Session
from ctxview.files.regular import read_regular
from ctxview.importers import claude_code, codex, formats
from ctxview.importers.common import BadRecord, TooDeep, parse_line, parse_record, when
from ctxview.importers.detect import CLAUDE, CODEX, EXPORT, NotTranscript, detect
from ctxview.importers.file_report import FileReport, Problem
from ctxview.importers.gemini_files import Sibling, known_ids, message_ids, project_root, sibling
from ctxview.importers.hub import HeldCalls, Hub, resume
from ctxview.importers.replay import Replay
from ctxview.importers.source import Identity, head_hash, identity, lines_from
from ctxview.importers.source_ids import SourceIds, named_by_file, session_id
from ctxview.store import Writer
from ctxview.store.session_lock import HookPending

__all__ = [
    "FileImporter",
    "FileReport",
    "HookedElsewhere",
    "Problem",
    "check_file",
    "import_file",
    "parse_line",
]

_IDENTIFY_LINES = 200
# An import commits what it read, with the offset and parser state that cover it, about this
# often: a kill loses at most this much work, and another writer never waits long for the lock.
COMMIT_SECONDS = 0.5


def _blank(raw: bytes) -> bool:
    return len(raw) < 64 and not raw.strip()


class HookedElsewhere(NotTranscript):
    """The file is a copy of the transcript of a session a host writes live (one sentence):
    refused like a file of neither format."""


class _Moved(BaseException):
    """The store's state of this file moved under a chunk (BaseException: never taken for a
    bad record by the parsers' handlers)."""


class Progress(Protocol):
    def advance(self, nbytes: int) -> None: ...


class Parser(Protocol):
    async def feed(self, rec: Any, lineno: int) -> None: ...
    async def provisional(self) -> None: ...
    def unsaid(self) -> bool: ...
    def state(self) -> dict[str, Any]: ...


def identify(path: Path, fmt: str) -> SourceIds:
    """The source session a file holds, from its first lines (never the whole file). `final`
    is False while the file is shorter than those lines and lacks what they are read for: a file
    still growing may tell its cwd or its start later, and then says the same as a whole one."""
    found: dict[str, Any] | None = None
    cwd: str | None = None
    other = line_format(fmt)  # another agent's (importers/formats.py)
    pick = other.source_ids if other else claude_code.source_ids if fmt == CLAUDE else \
        codex.source_ids  # fmt: skip
    final = False
    for n, line in enumerate(lines_from(path, 0, 0)):
        if n >= _IDENTIFY_LINES:
            final = True
            break
        if not line.complete:
            break  # the rest of it is not written yet
        try:
            got = pick(parse_line(line.raw))
        except (ValueError, RecursionError):
            continue
        if got and found is None:
            found = got
        if got and got.get("cwd") and not cwd:
            cwd = got["cwd"]
        if found and not found.get("ts") and got and got.get("ts"):
            found["ts"] = got["ts"]  # metadata records come first and carry no time
        if found and (cwd or fmt == CODEX) and found.get("ts"):
            final = True
            break
    if found is None:
        return named_by_file(path, final)
    cwd = cwd or found.get("cwd") or ""
    if not cwd and fmt == formats.GEMINI:  # its records name no folder: Gemini's own file does
        cwd = project_root(path)
    if cwd and not cwd.startswith("/"):
        cwd = "/" + cwd  # an anonymised or foreign (Windows) path: never resolved against ours
    stamp = when(found.get("ts"), float("nan"))
    return SourceIds(found["session"], agent=found.get("agent"), cwd=cwd,
                     started=None if stamp != stamp else stamp,
                     legacy=bool(found.get("legacy")), final=final)  # fmt: skip


@dataclass(frozen=True)
class LineFormat:
    source_ids: Callable[[Any], dict[str, Any] | None]
    parser: Callable[[Hub, dict[str, Any]], Parser]


def line_format(fmt: str) -> LineFormat | None:
    """The parser of a line format (None for Claude Code's, Codex's and the document formats).
    Imported here, when first asked for: most imports are of Claude Code's or Codex's."""
    if fmt == formats.PI:
        from ctxview.importers import pi

        return LineFormat(pi.source_ids, pi.PiParser)
    if fmt == formats.COPILOT:
        from ctxview.importers import copilot

        return LineFormat(copilot.source_ids, copilot.CopilotParser)
    if fmt == formats.CURSOR:
        from ctxview.importers import cursor

        return LineFormat(cursor.source_ids, cursor.CursorParser)
    if fmt == formats.GEMINI:
        from ctxview.importers import gemini

        return LineFormat(gemini.source_ids, gemini.GeminiParser)
    return None


class FileImporter:
    """Imports one file; call `step()` again to take what was appended since (follow).

    What is read is committed a transaction at a time (about every `COMMIT_SECONDS`), each with
    the byte offset, the line count and the parser's state that cover its rows, so after a kill,
    an exception or a full disk the next run starts exactly where the last commit stopped: nothing
    twice, nothing lost. Each transaction holds the store's write lock; at its start the stored
    state is compared with what this importer committed last, and when another process imported
    the same file in the meantime its state is taken from the store: two imports at once make
    one copy."""

    commit_lines: int | None = None  # tests: commit after this many lines as well
    # How long a transaction reads before it commits (the hook engine's import commits often:
    # the other sessions it serves wait for the store behind it).
    commit_seconds: float = COMMIT_SECONDS

    def __init__(self, writer: Writer, path: Path | str, held: HeldCalls | None = None) -> None:
        self.writer = writer
        self.path = Path(path).expanduser().resolve()
        self.held = held  # the hook engine's calls whose events go in after their records
        self._waited: set[tuple[str, str]] = set()  # kept when the rest is forgotten
        # What this Gemini file was to its session's stored file when last looked at: (the
        # file's identity, the session's data then, the verdict), kept when the rest is forgotten
        self._scanned: tuple[Identity, str, Sibling | None] | None = None
        self._forget()

    def _forget(self) -> None:
        """Drop what is in memory: the store has the truth (after a rollback, or another
        process's import of this file)."""
        self.hub: Hub | None = None
        self.parser: Parser | None = None
        self.format: str | None = None
        self.offset = 0
        self.line = 0
        self.ident: Identity | None = None
        self.head = ""
        self.problems_total = 0
        self._ids: dict[str, Any] = {}  # what the first lines said, while they may say more
        self._written: str | None = None  # the main session's data as last committed here
        self._saved_line = 0  # the line count that commit covered
        self._main_id: str | None = None  # the file's session, once known
        self._part_of: str | None = None  # a session this file holds nothing new of

    async def step(self, *, live: bool = False, progress: Progress | None = None) -> FileReport:
        fmt = detect(self.path) if self.hub is None else None
        if fmt == EXPORT:  # ctxview's own export: its importer
            from ctxview.importers.ctxview_json import import_export

            return await import_export(self.writer, self.path)
        if fmt in formats.DOCUMENTS:  # read whole at each step (importers/documents.py)
            from ctxview.importers.documents import import_document

            return await import_document(self.writer, self.path, fmt, live=live,
                                         progress=progress)  # fmt: skip
        report = FileReport(str(self.path))
        quiet_before = dict(getattr(self.parser, "quiet", {}))
        more = True
        while more:
            try:
                async with self.writer.batch(), self.writer.transaction(self._still_current):
                    more = await self._chunk(report, live, progress)
                if more:
                    # A turn for the other tasks of this process between two transactions (the
                    # hook engine's other sessions wait for the store behind this import).
                    await asyncio.sleep(0)
            except _Moved:
                # Another import of this file committed first: carry on from where it stopped
                # (what this one read past its own last commit is that one's to report).
                report.problems = [p for p in report.problems if p.line <= self._saved_line]
                await self._rewind_ids()
                self._forget()
            except HookPending as pending:
                # A hook (another process) may be storing a call this chunk met: the chunk is
                # rolled back, the hook's lock awaited outside any transaction, the chunk read
                # again (the call then found stored, or imported as Claude Code sent it).
                report.problems = [p for p in report.problems if p.line <= self._saved_line]
                await self._rewind_ids()
                self._forget()
                await pending.wait()
                more = True
            except BaseException:
                await self._rewind_ids()
                self._forget()  # what was read since the last commit is not in the store
                raise
        quiet = getattr(self.parser, "quiet", {})
        report.quiet = {k: n - quiet_before.get(k, 0) for k, n in quiet.items()
                        if n > quiet_before.get(k, 0)}  # fmt: skip
        if report.session:
            report.sessions.add(report.session)
        # A session renamed on the way (named by the file until a record said whose it was)
        # is counted once, by the name it has now.
        report.sessions = {sid for sid in report.sessions
                           if sid == report.session or await self.writer.session_info(sid)}  # fmt: skip
        return report

    async def _rewind_ids(self) -> None:
        """The ids the rolled-back rows took go back to their tree's counter (shared with other
        Sessions of the tree on this writer, `Writer.id_space`): the rerun gives them again,
        as one clean import does, unless another writer's step in this process took ids after
        them (the hook engine answers a call while it imports: `IdSpace.rewind`). Best effort:
        a store that fails now is failing anyway."""
        if self.hub is None:
            return
        with contextlib.suppress(Exception):
            for replay in list(self.hub.replays.values()):
                replay.session.ids.rewind(await self.writer.tree_next_rid(replay.id),
                                          owner=replay.session.writer)  # fmt: skip

    async def _still_current(self) -> None:
        """Run as the write lock is taken: what this chunk read from the store must not have
        moved since (another process importing the same file)."""
        if self._main_id is not None and not await self._current():
            raise _Moved

    async def _chunk(self, report: FileReport, live: bool, progress: Progress | None) -> bool:
        """Read and save one transaction's worth; True when there is more to read now."""
        if self._main_id is not None and not await self._current():
            self._forget()
        if self.hub is None:
            fmt = detect(self.path)  # NotTranscript for a file of neither format
            if fmt is None:
                return False  # empty: nothing to decide yet
            await self._open(fmt)
            if self._part_of is not None:  # nothing to read: asked again at the next step
                report.format, report.session = fmt, self._part_of
                self._forget()
                return False
        assert self.hub is not None and self.parser is not None
        report.format, report.session = self.format, self.hub.main.id
        if self._ids:
            await self._identify_again()
        now = identity(self.path)
        if self._replaced(now):
            report.replaced = True
            await self.hub.main.message(
                "system", "The source file was truncated or replaced; importing it again from "
                "its start.", ts=time.time(), data={"subtype": "source_replaced"},
            )  # fmt: skip
            self.offset = self.line = 0
            self.parser = self._parser({})
        elif now.size == self.offset and self.ident is not None and not self.parser.unsaid():
            self.ident = now
            return False  # nothing new: an import of an unchanged file adds nothing
        problems = len(report.problems)
        more = await self._read(report, live, progress)
        if not more:
            # The end of what is written: a message its next record may continue is stored
            # now, and replaced should that record come.
            await self.parser.provisional()
        self.ident = identity(self.path)
        self.head = head_hash(self.path, self.offset)
        self.problems_total += len(report.problems) - problems
        state: dict[str, Any] = {
            "format": self.format, "path": str(self.path), "offset": self.offset,
            "line": self.line, "dev": self.ident.dev, "ino": self.ident.ino, "head": self.head,
            "problems": self.problems_total, "parser": self.parser.state(),
        }  # fmt: skip
        if self._ids:
            state["ids"] = self._ids
        self._written = await self.hub.save(state, live=live)
        self._saved_line = self.line
        report.sessions |= self.hub.sessions
        return more

    async def _current(self) -> bool:
        """Whether the store still holds what this importer read or committed last (for a
        session it is making: still no such session)."""
        assert self._main_id is not None
        info = await self.writer.session_info(self._main_id)
        return (info["data"] if info is not None else None) == self._written

    def _replaced(self, now: Identity) -> bool:
        if self.ident is None or self.offset == 0:
            return False
        if now.size < self.offset:
            return True  # truncated
        # Another file at the path, the same one rewritten, or more of the same: the first bytes
        # already read decide (a 4 KiB read; an append-only transcript keeps them).
        return head_hash(self.path, self.offset) != self.head

    async def _read(self, report: FileReport, live: bool, progress: Progress | None) -> bool:
        """Feed lines to the parser; True when it stopped for a commit with more to read."""
        assert self.parser is not None
        path = str(self.path)
        started = time.monotonic()
        for count, line in enumerate(lines_from(self.path, self.offset, self.line), 1):
            raw = line.raw  # lines can be megabytes (base64 images): no copies of them here
            error: Exception | None = None
            try:
                rec, repaired = parse_record(raw)
            except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
                rec, error, repaired = None, exc, False
            if not line.complete and (live or error is not None):
                report.waiting = not _blank(raw)
                break  # a partial last line waits for the rest
            report.lines += 1
            report.bytes += line.end - line.start
            self.offset, self.line = line.end, line.number
            if progress is not None:
                progress.advance(line.end - line.start)
            if error is not None:
                if isinstance(error, TooDeep):
                    report.problems.append(Problem(path, line.number, f"{error}: skipped"))
                elif not _blank(raw):
                    report.problems.append(Problem(path, line.number, f"not JSON ({error})"))
            else:
                if repaired:
                    report.problems.append(Problem(path, line.number, "invalid Unicode (a lone "
                                                   "surrogate) imported as U+FFFD"))  # fmt: skip
                try:
                    await self.parser.feed(rec, line.number)
                except BadRecord as exc:
                    report.problems.append(Problem(path, line.number, str(exc)))
                except (KeyError, IndexError, TypeError, AttributeError, ValueError,
                        OverflowError, RecursionError) as exc:  # fmt: skip
                    # A shape no release has shown yet: skip the record, never the file.
                    report.problems.append(Problem(
                        path, line.number, f"unexpected shape ({type(exc).__name__}: {exc})"))  # fmt: skip
            if (self.commit_lines is not None and count >= self.commit_lines) or \
                    time.monotonic() - started >= self.commit_seconds:  # fmt: skip
                return True
        return False

    def _parser(self, state: dict[str, Any]) -> Parser:
        assert self.hub is not None
        other = line_format(self.format or "")
        if other is not None:
            return other.parser(self.hub, state)
        if self.format == CODEX:
            return codex.CodexParser(self.hub, state, legacy=self._legacy)
        return claude_code.ClaudeParser(self.hub, state, agent_file=self._agent is not None)

    async def _open(self, fmt: str) -> None:
        """Find this file's session in the store (resume where it stopped) or start it."""
        self.format = fmt
        ids = identify(self.path, fmt)
        self._legacy, self._agent = ids.legacy, ids.agent
        sid, info, kin = await self._info(session_id(fmt, ids))
        if kin is Sibling.PART:
            self._part_of = sid
            return
        if info is None and not ids.unnamed:
            # Imported before under the file's name, while no line said whose session it is:
            # that session is this one (and is renamed by `_identify_again`).
            named, found, _ = await self._info(session_id(fmt, named_by_file(self.path)))
            if found is not None and json.loads(found["data"] or "{}").get("import", {}).get(
                    "ids", {}).get("unnamed"):  # fmt: skip
                sid, info = named, found
        state: dict[str, Any] = {}
        self._main_id = sid
        self._written = info["data"] if info is not None else None
        if info is not None:
            main = await resume(self.writer, sid, ids.cwd)
            state = main.data.get("import", {})
            if kin is Sibling.NEXT:
                # The session goes on in this file: read from its start, the parser's memory of
                # the messages stored kept, so that they are passed over.
                parser = state.get("parser", {})
                state = {"parser": {**parser, "join": bool(known_ids(state))}}
                if "last_ts" in main.data.get("import", {}):
                    state["last_ts"] = main.data["import"]["last_ts"]
                await self.writer.update_session(sid, source_path=str(self.path))
            self.offset, self.line = int(state.get("offset", 0)), int(state.get("line", 0))
            self._saved_line = self.line
            self.problems_total = int(state.get("problems", 0))
            if "ino" in state:
                self.ident = Identity(state["dev"], state["ino"], self.offset)
                self.head = state.get("head", "")
            self._ids = state.get("ids", {})
        else:
            main = await self._start(sid, fmt, ids)
            if not ids.final:
                self._ids = ids.provisional()
        self.hub = Hub(self.writer, self.path, fmt, main)
        self.hub.held, self.hub.waited = self.held, self._waited
        if "last_ts" in state:
            self.hub.last_ts = float(state["last_ts"])
        elif info is not None:
            self.hub.last_ts = float(info["ended"] or info["started"])
        elif ids.started is not None:
            self.hub.last_ts = ids.started  # records without a time of their own come first
        self.parser = self._parser(state.get("parser", {}))
        for child in state.get("open", []):  # sidechains under way when it stopped
            with contextlib.suppress(KeyError):
                await self.hub.replay(child)

    async def _info(self, sid: str) -> tuple[str, dict[str, Any] | None, Sibling | None]:
        """The id this file's session has (`sid`, or when another file holds that id, `sid`
        and a hash of the path), its stored fields (None when it is not in the store), and for a
        Gemini chat file of a session another file of its folder holds, whether this one is a
        part of it or its continuation (`gemini_files`): either way that session is this file's.

        A session a host writes live (`"hooked"`: Claude Code's hooks, `ctxview mcp`) holds the
        ids the model saw, so its transcript lands in it: one made before anything named its
        transcript (by `ctxview mcp`) takes this file, and a copy of the transcript elsewhere
        is refused (`HookedElsewhere`), never a second replay with other ids."""
        info = await self.writer.session_info(sid)
        if info is not None and info["source_path"] != str(self.path):
            kin = self._sibling(info)
            if kin is not None:
                return sid, info, kin
            if json.loads(info["data"] or "{}").get("hooked"):
                if not info["source_path"]:
                    await self.writer.update_session(sid, source_path=str(self.path))
                    return sid, {**info, "source_path": str(self.path)}, None
                raise HookedElsewhere(
                    f"{self.path} is a copy of the session {sid}, which ctxview's hooks write "
                    f"live from {info['source_path']}: open {sid} instead."
                )
            sid = f"{sid}-{hashlib.sha1(str(self.path).encode()).hexdigest()[:6]}"
            info = await self.writer.session_info(sid)
        return sid, info, None

    def _sibling(self, info: dict[str, Any]) -> Sibling | None:
        """What this Gemini chat file is to the stored session `info` of the same session id,
        imported from another file (the file read again only when it or the session changed)."""
        if self.format != formats.GEMINI:
            return None
        now, data = identity(self.path), info["data"] or "{}"
        if self._scanned is not None and self._scanned[:2] == (now, data):
            return self._scanned[2]
        stored = json.loads(data)
        kin = sibling(self.path, info["source_path"], stored.get("import", {}),
                      message_ids(self.path), hooked=bool(stored.get("hooked")))  # fmt: skip
        self._scanned = (now, data, kin)
        return kin

    async def _identify_again(self) -> None:
        """The file was too short to say whose it is, its cwd or its start when its session was
        made: look again, and give the session what a whole file's first lines would have."""
        assert self.hub is not None and self.format is not None
        ids = identify(self.path, self.format)
        before = SourceIds(self._ids.get("session") or ids.session, agent=self._agent,
                           cwd=self._ids.get("cwd") or "")  # fmt: skip
        main = self.hub.main.id
        fields: dict[str, Any] = {}
        info = await self.writer.session_info(main)
        assert info is not None
        if ids.cwd and ids.cwd != before.cwd:
            fields["workspace"] = str(Path(ids.cwd).resolve())
            self.hub.main.cwd = ids.cwd
        if info["title"] == before.title(self.format) and ids.title(self.format) != info["title"]:
            fields["title"] = ids.title(self.format)
        if ids.started is not None and self._ids.get("started") is None:
            fields["started"] = ids.started
        renamed = None
        if self._ids.get("unnamed") and not ids.unnamed:
            # Named after the file until a record said whose session it is.
            sid, taken, _ = await self._info(session_id(self.format, ids))
            if taken is None and sid != main:
                renamed = sid
                fields["source_ref"] = ids.agent or ids.session
                if ids.agent and info["parent_session"] == f"cc-{before.session}":
                    fields["parent_session"] = f"cc-{ids.session}"
        if fields:
            await self.writer.update_session(main, **fields)
        self._ids = ids.provisional()
        if renamed is not None:
            await self.writer.rename_session(main, renamed)
            # The session, its replay state and the parser's, taken again under the new id.
            self.hub.main.data["import"]["ids"] = self._ids
            await self.writer.update_session(renamed, data=json.dumps(self.hub.main.data,
                                                                      ensure_ascii=False))  # fmt: skip
            fmt = self.format
            self._forget()
            await self._open(fmt)

    async def _start(self, sid: str, fmt: str, ids: SourceIds) -> Replay:
        title, parent, call = "", None, None
        data: dict[str, Any] = {}
        if ids.agent and fmt == formats.GEMINI:
            # Gemini keeps a sub-agent's chat file in a folder named after its parent session.
            parent = session_id(fmt, SourceIds(self.path.parent.name))
            title = f"agent {ids.agent}"
            call = await self._agent_call(parent, ids.agent)
        elif ids.agent:
            parent = f"cc-{ids.session}"
            meta = self.path.with_name(self.path.stem + ".meta.json")
            if meta.is_file():
                try:
                    found = parse_line(read_regular(meta, 1 << 20))
                except (ValueError, RecursionError, OSError):
                    found = {}
                if isinstance(found, dict):
                    title = str(found.get("description") or "")
                    data["titled"] = bool(title)
                    data["agent"] = {k: found[k] for k in ("agentType", "worktreePath")
                                     if k in found}  # fmt: skip
            title = title or f"agent {ids.agent}"
            call = await self._agent_call(parent, ids.agent)
        title = title or ids.title(fmt)
        session = await Session.start(
            self.writer, ids.cwd or "/", title=title, source=fmt, session_id=sid,
            started=ids.started, source_path=str(self.path), source_ref=ids.agent or ids.session,
            parent_session=parent, parent_call=call, data=json.dumps(data),
        )  # fmt: skip
        return Replay(session, ids.cwd, data)

    async def _agent_call(self, parent: str, agent: str) -> str | None:
        """The parent's call that started the sub-agent, if the parent was imported first (else
        its import links the two: `Hub.link_agent`)."""
        pinfo = await self.writer.session_info(parent)
        if pinfo is None:
            return None
        agents = json.loads(pinfo["data"] or "{}").get("agents")
        call = agents.get(agent) if isinstance(agents, dict) else None
        return call if isinstance(call, str) else None


async def check_file(writer: Writer, path: Path | str) -> None:
    """Refuse now, before anything is read into the store (a viewer about to open on it), what
    an import of `path` would refuse: a file of neither format (`NotTranscript`), a copy of a
    hooked session's transcript (`HookedElsewhere`). A file still empty passes."""
    importer = FileImporter(writer, path)
    fmt = detect(importer.path)
    if fmt is not None and (fmt in (CLAUDE, CODEX) or line_format(fmt) is not None):
        importer.format = fmt
        await importer._info(session_id(fmt, identify(importer.path, fmt)))


async def import_file(writer: Writer, path: Path | str, *,
                      progress: Progress | None = None) -> FileReport:  # fmt: skip
    """Import what is new in one file (all of it the first time)."""
    return await FileImporter(writer, path).step(progress=progress)
