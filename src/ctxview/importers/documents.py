"""The session files that are not JSON lines appended to, read whole at each step: Gemini CLI's
JSON chat document (rewritten whole on every update), OpenCode's SQLite database and its older
storage/ folder of JSON files, aider's `.aider.chat.history.md` (many sessions in one file).

Each source holds one or more sessions, each an ordered list of units (a message, a block of
aider's log). A session's data remembers how many of its units were imported and the first one's
identity, so an import of an unchanged source adds nothing, a grown one adds only the new units,
and one whose first unit changed (replaced, truncated) is read again from its start, as the
runner does for a line file. While following, a last unit that may still change (a message whose
tool calls have not finished) waits for the next step; aider's last block waits only while the
file is being written, and what is appended to it after it was imported is imported then."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from ctxview.engine.session import Session
from ctxview.files.regular import FileTooLarge, read_regular
from ctxview.importers import formats
from ctxview.importers.common import BadRecord, id_text, path_text, valid_unicode, when
from ctxview.importers.detect import NotTranscript
from ctxview.importers.document_probe import gemini_document, opencode_storage_root
from ctxview.importers.file_report import FileReport
from ctxview.importers.gemini_files import Sibling, project_root, sibling
from ctxview.importers.replay import Replay
from ctxview.store import Writer

_DOCUMENT_BYTES = 512 << 20


@dataclass
class DocSession:
    key: str  # the agent's own id: the session key is `<prefix>-<key>`
    cwd: str
    units: list[Any]
    head: str  # the first unit's identity: another one there means the source was replaced
    final: int  # units[:final] are finished; the rest may still change (held while following)
    # Its last unit is text its agent may still append to (the end of aider's log): imported when
    # the file has been still a while, and what is appended to it later imported then.
    grows: bool = False
    title: str | None = None
    started: float | None = None
    parent: str | None = None  # the parent session's key (a sub-agent's session)
    parent_call: str | None = None  # the parent's call that started it
    data: dict[str, Any] = field(default_factory=dict)


class DocParser(Protocol):
    quiet: dict[str, int]

    async def feed(self, rec: Any, lineno: int) -> None: ...
    def state(self) -> dict[str, Any]: ...


# Gemini CLI


def _gemini_cwd(path: Path, doc: dict[str, Any]) -> str:
    """The project's folder: `directories` when the document lists them, else the one Gemini
    names beside `chats/` (`gemini_files.project_root`)."""
    dirs = doc.get("directories")
    if isinstance(dirs, list) and dirs and path_text(dirs[0]):
        return str(dirs[0])
    return project_root(path)


def read_gemini(path: Path, live: bool) -> list[DocSession]:
    doc = gemini_document(path)
    if doc is None:
        if live:
            return []  # being rewritten: whole at the next step
        raise NotTranscript(f"{path} is not a whole Gemini CLI chat document (it does not parse).")
    doc = valid_unicode(doc)
    messages = [m for m in doc["messages"]]
    final = len(messages)
    if messages and isinstance(messages[-1], dict) and _gemini_open(messages[-1]):
        final -= 1
    first = messages[0] if messages else None
    head = str(first.get("id")) if isinstance(first, dict) else ""
    summary = doc.get("summary")
    return [DocSession(doc["sessionId"], _gemini_cwd(path, doc), messages, head, final,
                       title=summary if isinstance(summary, str) and summary else None,
                       started=_stamp(doc.get("startTime")),
                       data={"kind": doc["kind"]} if isinstance(doc.get("kind"), str) else {})]  # fmt: skip


def _gemini_open(msg: dict[str, Any]) -> bool:
    calls = msg.get("toolCalls")
    return isinstance(calls, list) and any(
        isinstance(c, dict) and c.get("status") not in ("success", "error", "cancelled")
        for c in calls)  # fmt: skip


# OpenCode


def _json_file(path: Path) -> Any:
    try:
        return valid_unicode(orjson.loads(read_regular(path, 64 << 20)))
    except (orjson.JSONDecodeError, FileTooLarge, OSError, RecursionError):
        return None


def _opencode_storage(root: Path) -> list[dict[str, Any]]:
    """The storage/ folder as the database reader gives it (store/foreign_opencode.py)."""
    sessions: list[dict[str, Any]] = []
    for f in sorted(root.glob("session/*/*.json")):
        info = _json_file(f)
        if not isinstance(info, dict) or not id_text(info.get("id")):
            continue
        messages: list[dict[str, Any]] = []
        for mf in sorted((root / "message" / info["id"]).glob("*.json")):
            msg = _json_file(mf)
            if not isinstance(msg, dict) or not id_text(msg.get("id")):
                continue
            parts = [p for pf in sorted((root / "part" / msg["id"]).glob("*.json"))
                     if isinstance(p := _json_file(pf), dict)]  # fmt: skip
            messages.append({"info": msg, "parts": sorted(parts, key=lambda p: str(p.get("id")))})
        messages.sort(key=lambda m: (_created(m["info"]), str(m["info"].get("id"))))
        sessions.append({"info": info, "messages": messages})
    sessions.sort(key=lambda s: (_created(s["info"]), str(s["info"]["id"])))
    return sessions


def _created(info: dict[str, Any]) -> float:
    t = info.get("time")
    c = t.get("created") if isinstance(t, dict) else None
    return float(c) if isinstance(c, int | float) and not isinstance(c, bool) else 0.0


def read_opencode(path: Path, fmt: str) -> list[DocSession]:
    from ctxview.store import foreign_opencode

    if fmt == formats.OPENCODE:
        try:
            raw = foreign_opencode.read_sessions(path)
        except foreign_opencode.OpenCodeUnreadable as exc:
            raise NotTranscript(str(exc)) from None
        raw = valid_unicode(raw)
    else:
        root = opencode_storage_root(path)
        if root is None:
            raise NotTranscript(f"{path} is not OpenCode's storage folder.")
        raw = _opencode_storage(root)
    # A sub-agent's session is named by the `task` call that started it (its metadata).
    calls: dict[str, str] = {}
    for s in raw:
        for m in s["messages"]:
            for p in m["parts"]:
                state = p.get("state")
                meta = state.get("metadata") if isinstance(state, dict) else None
                if p.get("type") == "tool" and isinstance(meta, dict) and \
                        id_text(meta.get("sessionId")) and id_text(p.get("callID")):  # fmt: skip
                    calls[meta["sessionId"]] = p["callID"]
    out = []
    for s in raw:
        info = s["info"]
        msgs = s["messages"]
        final = len(msgs)
        if msgs and _opencode_open(msgs[-1]):
            final -= 1
        created = _created(info)
        out.append(DocSession(
            info["id"], str(path_text(info.get("directory")) or ""), msgs,
            str(msgs[0]["info"].get("id")) if msgs else "", final,
            title=_opencode_title(info.get("title")),
            started=created / 1000 if created else None,
            parent=id_text(info.get("parentID")), parent_call=calls.get(info["id"]),
        ))  # fmt: skip
    return out


# What OpenCode names a session until its title model answers (`Session.createDefaultTitle`):
# no title of the session's own, so its first prompt names it meanwhile.
_OPENCODE_UNTITLED = re.compile(r"(?:New|Child) session - \d{4}-\d\d-\d\dT[\d:.]+Z")


def _opencode_title(title: Any) -> str | None:
    if not isinstance(title, str) or not title or _OPENCODE_UNTITLED.fullmatch(title):
        return None
    return title


def _opencode_open(msg: dict[str, Any]) -> bool:
    """A message still being written: an assistant turn not completed, a tool still running, or
    a prompt whose text is not there yet (OpenCode writes a message, then each of its parts)."""
    info = msg["info"]
    if info.get("role") == "user" and not msg["parts"]:
        return True
    if info.get("role") == "assistant":
        t = info.get("time")
        if isinstance(t, dict) and not t.get("completed") and not info.get("error"):
            return True
    return any(isinstance(p.get("state"), dict) and p["state"].get("status") in ("pending",
               "running") for p in msg["parts"])  # fmt: skip


# aider

_AIDER_START = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
# While following, the log's last block waits until the file has been still this long: aider
# appends a block line by line, and writes nothing when it exits (a finished run's last block,
# its report of the edits, would wait for the next run otherwise).
AIDER_SETTLE_SECONDS = 1.0


def read_aider(path: Path, live: bool) -> list[DocSession]:
    from ctxview.importers.aider import blocks

    try:
        text = read_regular(path, _DOCUMENT_BYTES).decode("utf-8", "replace")
    except FileTooLarge:
        raise NotTranscript(f"{path} is larger than aider's history ctxview reads.") from None
    tag = hashlib.sha1(str(path).encode()).hexdigest()[:6]
    writing = live and _written_within(path, AIDER_SETTLE_SECONDS)
    out: list[DocSession] = []
    starts: list[tuple[int, str]] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _AIDER_START.match(line)
        if m:
            starts.append((i, m.group(1)))
    seen: dict[str, int] = {}
    if not starts or starts[0][0] > 0:
        # What comes before the first header: a session whose start the file no longer holds.
        starts.insert(0, (-1, ""))
    for n, (i, stamp) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        units = blocks(lines[i + 1 : end])
        key = stamp.replace("-", "").replace(":", "").replace(" ", "T") or "start"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}.{seen[key]}"  # two sessions started in the same second
        last = n + 1 == len(starts)
        try:
            started: float | None = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp()
        except ValueError:
            started = None
        if i < 0 and not units:
            continue
        out.append(DocSession(f"{key}-{tag}", str(path.parent), units, lines[max(i, 0)],
                              len(units) - (1 if last and units and writing else 0),
                              started=started, grows=last))  # fmt: skip
    return out


def _written_within(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime < seconds
    except OSError:
        return False


def _grown(doc: DocSession, state: dict[str, Any]) -> dict[str, Any] | None:
    """What was appended to the last unit imported since it was imported (a block of aider's log
    fed when the file was still, and written to again), as a unit of its own; None if nothing."""
    tail = state.get("tail")
    if not (isinstance(tail, list) and len(tail) == 2):
        return None
    i, n = int(tail[0]), int(tail[1])
    if i != int(state.get("done", 0)) - 1 or not 0 <= i < len(doc.units):
        return None
    unit = doc.units[i]
    if not (isinstance(unit, dict) and isinstance(unit.get("text"), str)):
        return None
    more = unit["text"][n:].strip("\n")
    return {**unit, "text": more} if len(unit["text"]) > n and more else None


def _stamp(value: Any) -> float | None:
    t = when(value, float("nan"))
    return None if t != t else t


# The import


def _reader(fmt: str) -> Callable[[Path, bool], list[DocSession]]:
    if fmt == formats.GEMINI_JSON:
        return read_gemini
    if fmt in (formats.OPENCODE, formats.OPENCODE_STORAGE):
        return lambda path, live: read_opencode(path, fmt)
    return read_aider


def _parser(fmt: str, hub: Any, state: dict[str, Any]) -> DocParser:
    if fmt == formats.GEMINI_JSON:
        from ctxview.importers.gemini import GeminiParser

        return GeminiParser(hub, state)
    if fmt in (formats.OPENCODE, formats.OPENCODE_STORAGE):
        from ctxview.importers.opencode import OpenCodeParser

        return OpenCodeParser(hub, state)
    from ctxview.importers.aider import AiderParser

    return AiderParser(hub, state)


async def import_document(writer: Writer, path: Path, fmt: str, *, live: bool = False,
                          progress: Any = None) -> FileReport:  # fmt: skip
    """Import what is new in every session of the source at `path`."""

    report = FileReport(str(path), format=fmt)
    docs = _reader(fmt)(path, live)
    prefix = formats.PREFIX[formats.AGENT_OF[fmt]]
    sids: dict[str, str] = {}
    for doc in docs:
        sid = await _sid(writer, f"{prefix}-{doc.key}", path, fmt, doc)
        if sid is None:  # a part of the session another file of its folder holds: nothing new
            report.session = f"{prefix}-{doc.key}"
            continue
        sids[doc.key] = sid
        async with writer.batch(), writer.transaction():
            await _one(writer, path, fmt, doc, sid, sids, live, report)
        if doc.units:
            report.session = sid
    if report.lines:
        report.bytes = _size(path)
    if progress is not None:
        progress.advance(_size(path))
    return report


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


async def _sid(writer: Writer, sid: str, path: Path, fmt: str, doc: DocSession) -> str | None:
    """`sid`, or with a hash of the path when another source already holds it (runner._info);
    None for a Gemini document all of whose messages that other source gave (the document a
    resume went on from in `<name>.jsonl`, gemini_files.py)."""
    info = await writer.session_info(sid)
    if info is not None and info["source_path"] != str(path):
        if fmt == formats.GEMINI_JSON:  # only Gemini's documents can be a part of another
            data = json.loads(info["data"] or "{}")
            ids = [m for u in doc.units if isinstance(u, dict) and (m := id_text(u.get("id")))]
            if sibling(path, info["source_path"], data.get("import", {}), ids,
                       hooked=bool(data.get("hooked"))) is Sibling.PART:  # fmt: skip
                return None
        return f"{sid}-{hashlib.sha1(str(path).encode()).hexdigest()[:6]}"
    return sid


async def _one(writer: Writer, path: Path, fmt: str, doc: DocSession, sid: str,
               sids: dict[str, str], live: bool, report: Any) -> None:  # fmt: skip
    from ctxview.importers.file_report import Problem
    from ctxview.importers.hub import Hub, resume

    agent = formats.AGENT_OF[fmt]
    info = await writer.session_info(sid)
    if info is None and not doc.units:
        return  # nothing said yet (an aider session of only its header): no empty session
    if info is not None:
        known = json.loads(info["data"] or "{}").get("import", {})
        if known.get("head") == doc.head and int(known.get("done", 0)) >= (
                doc.final if live else len(doc.units)) and int(known.get("done", 0)) <= len(
                doc.units) and _grown(doc, known) is None and known.get("title") == doc.title:  # fmt: skip
            return  # nothing new: looked at without loading the session
    if info is None:
        parent = sids.get(doc.parent) if doc.parent else None
        if parent is not None and await writer.session_info(parent) is None:
            parent = None
        data: dict[str, Any] = dict(doc.data)
        if doc.title:
            data["titled"] = True
        session = await Session.start(
            writer, doc.cwd or "/", title=doc.title or Path(doc.cwd).name or f"{agent} {doc.key[:8]}",
            source=agent, session_id=sid, started=doc.started, source_path=str(path),
            source_ref=doc.key, parent_session=parent,
            parent_call=doc.parent_call if parent else None, data=json.dumps(data),
        )  # fmt: skip
        main = Replay(session, doc.cwd, data)
        state: dict[str, Any] = {}
        retitled = False
    else:
        main = await resume(writer, sid, doc.cwd)
        state = main.data.get("import", {})
        retitled = bool(doc.title) and doc.title != state.get("title")
        if retitled:
            main.titled(str(doc.title))  # the agent named it since (OpenCode's title model)
    done = int(state.get("done", 0))
    upto = doc.final if live else len(doc.units)
    hub = Hub(writer, path, agent, main)
    hub.last_ts = float(state.get("last_ts") or doc.started or time.time())
    replaced = done > 0 and (state.get("head") != doc.head or done > len(doc.units))
    if replaced:
        report.replaced = True
        await main.message("system", "The source was truncated or replaced; importing it again "
                           "from its start.", ts=time.time(), data={"subtype": "source_replaced"})  # fmt: skip
        done, state = 0, {}
    grown = None if replaced else _grown(doc, state)
    if upto <= done and grown is None and not replaced and not retitled:
        return
    parser = _parser(fmt, hub, state.get("parser", {}))
    problems = int(state.get("problems", 0))
    feeds = [(i, doc.units[i]) for i in range(done, upto)]
    if grown is not None:
        feeds.insert(0, (done - 1, grown))
    for i, unit in feeds:
        try:
            await parser.feed(unit, i + 1)
        except BadRecord as exc:
            report.problems.append(Problem(str(path), i + 1, f"{doc.key}: {exc}"))
            problems += 1
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, OverflowError,
                RecursionError) as exc:  # fmt: skip
            report.problems.append(Problem(str(path), i + 1, f"{doc.key}: unexpected shape "
                                           f"({type(exc).__name__}: {exc})"))  # fmt: skip
            problems += 1
    for kind, count in parser.quiet.items():
        report.quiet[kind] = report.quiet.get(kind, 0) + count
    report.lines += max(0, upto - done) + (grown is not None)
    done = max(upto, done)
    tail = None  # the last unit, fed while its agent may still append to it: how much of it
    if doc.grows and done == len(doc.units) and done > 0:
        tail = [done - 1, len(doc.units[done - 1]["text"])]
    await hub.save({"format": fmt, "path": str(path), "done": done, "head": doc.head,
                    "problems": problems, "parser": parser.state(), "tail": tail,
                    "title": doc.title}, live=live)  # fmt: skip
    report.sessions |= hub.sessions
