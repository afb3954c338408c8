"""The ctxview sessions one source file fills (its own and inline sidechains'), which the
format's parser writes through: each a `Replay`, started, resumed from the store, released and
saved with the import's state."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Protocol

from ctxview.engine.session import Session
from ctxview.importers.detect import CLAUDE
from ctxview.importers.formats import PI
from ctxview.importers.replay import Replay
from ctxview.store import Writer


class HeldCalls(Protocol):
    """Tool calls a host's hook answered whose events wait to be stored right after the
    transcript's record of the call (Claude Code's hooks answer first: claude_hooks.py), so the
    message that made a call comes before its events, as the model went."""

    def has(self, session_id: str, call_id: str) -> bool: ...

    async def put(self, session_id: str, call_id: str) -> None: ...


class Hub:
    """The ctxview sessions one file fills: its own, and inline sidechains' (child sessions)."""

    def __init__(self, writer: Writer, path: Path, fmt: str, main: Replay) -> None:
        self.writer = writer
        self.path = path
        self.format = fmt
        self.main = main
        self.held: HeldCalls | None = None  # set by the host's hook engine that imports
        self.waited: set[tuple[str, str]] = set()  # (session, call) a hook's lock was awaited for
        self.hook_errors: list[dict[str, Any]] = []  # the host's records of hooks that failed
        self.replays: dict[str, Replay] = {main.id: main}
        self.sessions: set[str] = {main.id}  # every session this hub made or went back to
        self._released: dict[str, dict[str, Any]] = {}
        self.last_ts = time.time()

    async def replay(self, sid: str) -> Replay:
        found = self.replays.get(sid)
        if found is None:
            if sid in self._released:  # back to a sidechain let go this step: its state first
                await self.writer.update_session(sid, **self._released.pop(sid))
            found = await resume(self.writer, sid, self.main.cwd)
            self.replays[sid] = found
        self.sessions.add(sid)
        return found

    async def child(self, sid: str, *, title: str, parent_call: str | None, started: float,
                    source_ref: str | None) -> Replay:  # fmt: skip
        if sid in self.replays:
            return self.replays[sid]
        if await self.writer.session_info(sid) is None:
            session = await Session.start(
                self.writer, self.main.cwd or "/", title=title, source=self.format,
                session_id=sid, started=started, source_path=str(self.path),
                source_ref=source_ref, parent_session=self.main.id, parent_call=parent_call,
            )  # fmt: skip
            # A sidechain is named by its Task call's description, not by its prompt.
            data = {"titled": True} if parent_call else {}
            self.replays[sid] = Replay(session, self.main.cwd, data)
            self.sessions.add(sid)
            return self.replays[sid]
        return await self.replay(sid)

    async def link_agent(self, agent_id: str, call_ref: str, child: str | None = None) -> None:
        """A parent's call names its sub-agent (Claude Code's Task/Agent, Gemini's invoke_agent):
        link the two, whichever came first. `child` is the sub-agent's session, `cc-<agent>` by
        default."""
        child = child or f"cc-{agent_id}"
        if child == self.main.id:
            return  # a record naming its own session as its sub-agent: no loop in the tree
        self.main.data.setdefault("agents", {})[agent_id] = call_ref
        info = await self.writer.session_info(child)
        if info is not None and info["parent_call"] != call_ref:
            await self.writer.update_session(child, parent_session=self.main.id,
                                             parent_call=call_ref)  # fmt: skip

    async def release(self, sid: str) -> None:
        """A child session that is over: its state is written and it leaves memory (resumed from
        the store should the transcript come back to it)."""
        replay = self.replays.pop(sid, None)
        if replay is not None and replay is not self.main:
            # Written with the rest at the end of the step: an update now would end the batch.
            self._released[sid] = self._fields(replay, ended=self.last_ts)

    def _fields(self, replay: Replay, *, ended: float | None) -> dict[str, Any]:
        fields: dict[str, Any] = {"data": json.dumps(replay.data, ensure_ascii=False)}
        if not (self.format in (CLAUDE, PI) and replay.data.get("hooked")):
            # A hooked Claude Code session's life is its hooks' (SessionStart, SessionEnd,
            # SubagentStop): an import of its transcript, live or not, neither ends it nor makes
            # it live again (the hook engine's own import made ended sub-agents live).
            fields["ended"] = ended
        if replay.title:
            fields["title"] = replay.title
        return fields

    async def save(self, import_state: dict[str, Any], *, live: bool) -> str:
        """Write each session's state. An imported session counts as ended at its last record
        (nothing says more); one being followed is live. Returns the main session's data as
        written."""
        import_state["last_ts"] = self.last_ts
        import_state["open"] = [sid for sid in self.replays if sid != self.main.id]
        self.main.data["import"] = import_state
        released, self._released = self._released, {}
        for sid, fields in released.items():
            await self.writer.update_session(sid, **fields)
        written = ""
        for replay in self.replays.values():
            fields = self._fields(replay, ended=None if live else self.last_ts)
            await self.writer.update_session(replay.id, **fields)
            if replay is self.main:
                written = fields["data"]
        return written


async def resume(writer: Writer, sid: str, cwd: str) -> Replay:
    info = await writer.session_info(sid)
    if info is None:
        raise KeyError(sid)
    session = await Session.resume(writer, sid)
    return Replay(session, info["workspace"] or cwd, json.loads(info["data"] or "{}"))


class LiveCalls:
    """The calls a hooked session's own engine already stored while its agent ran (`ctxview mcp`
    for Codex, the extension for pi), by the agent's call id: the import adds the messages and
    usage around them, never a second copy. Read again only when a call is not among them."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._refs: set[str] | None = None

    async def stored(self, call_id: str) -> bool:
        main = self.hub.main
        if not main.data.get("hooked"):
            return False
        if self._refs is None or call_id not in self._refs:  # stored since the last look
            self._refs = await self.hub.writer.tree_call_refs(main.id)
        if call_id in self._refs:
            return True
        # Imported here (a call the engine did not take): past the ids it took.
        main.session.advance_ids(await self.hub.writer.tree_next_rid(main.id))
        return False
