"""The Claude Code sessions one hook engine serves, kept in memory between hooks: made on first
sight (or taken over from an import), brought up to date with what other writers stored since
(`Session.catch_up`, so a hook costs the same at 10 or 10,000 results), their ids made durable
before an answer gives them."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxview.agents.claude_code.payload import resolved
from ctxview.agents.claude_code.transcript_files import agent_file, compact_summary
from ctxview.engine.session import Session
from ctxview.importers.detect import CLAUDE
from ctxview.importers.runner import FileImporter
from ctxview.store.probe import Probe, SqliteError
from ctxview.store.records import Event
from ctxview.store.reserve import IdReserver
from ctxview.store.writer import Writer


@dataclass
class Served:
    """One Claude Code session as the resident engine holds it."""

    session: Session
    last_seq: int = 0
    trigger: str | None = None  # the PreCompact trigger, for the compaction that follows
    compact_from: int = 0  # the transcript's size at PreCompact: its summary comes after
    # (seq of a compaction stored without its summary, the transcript, where to look from)
    summary_due: tuple[int, str, int] | None = None
    # The transcript (and its sub-agents' files) imported as it grows: messages, usage and
    # sub-agents land in order around the results the hook stores.
    importers: dict[Path, FileImporter] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    reserved: int = 0  # the store's counter as this engine set it: ids below are its own


class Sessions:
    """The served sessions by store id (`served`), over the engine's writer, its read
    connection and its id reserver."""

    def __init__(self, writer: Writer, probe: Probe, reserver: IdReserver, budget: float,
                 served: dict[str, Served]) -> None:  # fmt: skip
        self._writer, self._probe, self._reserver = writer, probe, reserver
        self._budget = budget  # seconds an id reservation may wait for the store's lock
        self.served = served

    async def serve(self, sid: str, payload: dict[str, Any], *, others: bool = True) -> Served:
        """The session, created on first sight, up to date with the store. `others` False: the
        lane has held the tree's lock since it last served this session, so nobody else wrote
        it but an import (which takes no lock): only the id counter is brought up to date."""
        served = self.served.get(sid)
        if served is None:
            info = await self._writer.session_info(sid)
            if info is None:
                session = await self.start(sid, payload)
            else:
                # Inside a batch, resume skips replaying the context as sent: a hook never
                # asks for it (Claude Code sends the context), and it is most of a cold start.
                async with self._writer.batch():
                    session = await Session.resume(self._writer, sid)
                await self._take_over(sid, info, payload)
            served = Served(session, self.last_seq(sid))
            self.served[sid] = served
            return served
        if not others:
            self.others_ids(served)
            return served
        last = self.last_seq(sid)
        if last != served.last_seq:  # another writer (recall over MCP, an import) wrote
            self._catch_up(served, last)
        else:  # another session of the tree may have taken ids (a sub-agent, a recall)
            self.others_ids(served)
        if served.summary_due is not None:
            await self._fill_summary(served)
        return served

    async def _take_over(self, sid: str, info: dict[str, Any], payload: dict[str, Any]
                         ) -> None:  # fmt: skip
        """A session in the store before its first hook: an import or `follow` of the
        transcript made it (Claude Code resumed a session from before the hooks, or was followed
        first), or `ctxview mcp` did, naming no transcript. From now on it is hooked, so an
        import (the hook's own, `follow`'s) pairs the results the hook stores with their
        transcript records instead of adding them a second time, and it is the transcript's."""
        data = json.loads(info["data"] or "{}")
        fields: dict[str, Any] = {}
        if not data.get("hooked"):
            fields["data"] = json.dumps({**data, "hooked": True}, ensure_ascii=False)
        path = resolved(payload.get("transcript_path"))
        if not info["source_path"] and path and not payload.get("agent_id"):
            fields["source_path"] = path
        if fields:
            await self._writer.update_session(sid, **fields)

    async def _fill_summary(self, served: Served) -> None:
        """A compaction stored before its summary reached the transcript gets it now."""
        assert served.summary_due is not None
        seq, transcript, start = served.summary_due
        summary = compact_summary(transcript, start)
        if summary:
            await self._writer.set_event_text(served.session.id, seq, summary)
            served.summary_due = None

    async def start(self, sid: str, payload: dict[str, Any]) -> Session:
        cwd = c if isinstance(c := payload.get("cwd"), str) else "/"
        parent = call = None
        source_path = resolved(payload.get("transcript_path"))
        agent = payload.get("agent_id")
        if isinstance(agent, str) and agent:
            parent = f"cc-{payload['session_id']}"
            source_path = agent_file(source_path, payload["session_id"], agent)
            # The parent's Agent call, when its import has seen the result naming this agent
            # (else the import links the two when it does: `Hub.link_agent`).
            info = await self._writer.session_info(parent)
            if info is not None:
                call = json.loads(info["data"] or "{}").get("agents", {}).get(agent)
        return await Session.start(
            self._writer, cwd, title=Path(cwd).name or "claude code", source=CLAUDE,
            session_id=sid, source_path=source_path,
            source_ref=agent if parent else payload.get("session_id"),
            parent_session=parent, parent_call=call, data=json.dumps({"hooked": True}),
        )  # fmt: skip

    def last_seq(self, sid: str) -> int:
        return self._probe.last_seq(sid)

    def _catch_up(self, served: Served, last: int) -> None:
        """Take in what others wrote since `served.last_seq` (`Session.catch_up`)."""
        session = served.session
        session.catch_up(self._probe.results_after(session.id, served.last_seq), 0)
        self.others_ids(served)
        served.last_seq = last

    async def reserve(self, served: Served, upto: int) -> None:
        """The tree's ids below `upto` are this engine's, though the events holding them are
        stored later: no writer gives them again, whatever happens to those events (a crash, a
        store gone unwritable). Set in the session's own `next_rid`, which the tree's counter
        is the largest of (`store.tree.next_rid`). Committed at once; while the writer's import
        holds the store's lock (a few milliseconds), tried again as soon as it lets go. (Ids
        reserved ahead instead would leave a gap in the tree's ids whenever the engine is
        killed.)"""
        await self._reserver.reserve(served.session.id, upto, self._budget)
        served.reserved = max(served.reserved, upto)

    def others_ids(self, served: Served) -> None:
        """Ids another writer took (the store's counter past what this engine reserved): the
        next id this one gives is past them."""
        taken = self.next_rid(served.session.id)
        if taken > served.reserved:
            served.session.advance_ids(taken)

    def next_rid(self, sid: str) -> int:
        """The next id of `sid`'s tree as stored (`store.tree`): reserved ones included."""
        return self._probe.next_rid(sid)

    def forget(self, served: Served, owner: object) -> None:
        """After a step that did not commit: the ids it took in memory go back to the tree's
        counter (`IdSpace.rewind`: only those no one else took after them; the store's counter
        holds every id an answer gave), and the next step reads the session from the store
        (its dedupe table may hold what was never stored)."""
        self.served.pop(served.session.id, None)
        with contextlib.suppress(SqliteError):
            served.session.ids.rewind(self.next_rid(served.session.id), owner=owner)

    async def end(self, sid: str) -> None:
        """End a session of the tree (a sub-agent) unless it has ended: its `end` event and its
        end time, as `Session.end` writes them."""
        info = await self._writer.session_info(sid)
        if info is None or info["ended"] is not None:
            return
        now = time.time()
        await self._writer.append(sid, [Event(ts=now, kind="end")])
        await self._writer.update_session(sid, ended=now)
