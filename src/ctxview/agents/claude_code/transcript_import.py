"""A hooked Claude Code session's transcript imported as it grows, by the hook engine after its
answers: what the model said before each tool call, usage, sub-agents and their files; a held
call's events go in right after the transcript's record of the call (`held_calls`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxview.agents import failures
from ctxview.agents.claude_code.held_calls import Held, HeldCalls
from ctxview.agents.claude_code.served import Served, Sessions
from ctxview.agents.claude_code.transcript_files import written
from ctxview.agents.hook_trace import Trace
from ctxview.files.regular import is_regular
from ctxview.importers.follow import sub_agents
from ctxview.importers.runner import FileImporter
from ctxview.store.writer import Writer

# The transcript's import commits this often: another session's hook waits at most about
# this long for the store behind it (a huge transcript seen for the first time).
IMPORT_COMMIT_SECONDS = 0.05


def transcript_of(served: Served, payload: dict[str, Any]) -> Path | None:
    """The transcript a hook imports: its session's own (a sub-agent's is its parent's to
    import), when the hook names one (it may not exist, or not be a regular file)."""
    path = payload.get("transcript_path")
    if served.session.id != f"cc-{payload.get('session_id')}" or not isinstance(path, str):
        return None
    return Path(path).expanduser().resolve()


class TranscriptImport:
    """The transcripts of the sessions one hook engine serves, each through its own importer
    (`Served.importers`), over the engine's writer."""

    def __init__(self, store: Path, writer: Writer, sessions: Sessions, calls: HeldCalls,
                 port: int | None) -> None:  # fmt: skip
        self._store, self._writer, self._sessions, self._calls = store, writer, sessions, calls
        self._port = port  # where Claude Code's http hooks reach the engine

    async def follow(self, served: Served, payload: dict[str, Any], *, growing: bool,
                          trace: Trace, held: Held | None = None) -> None:  # fmt: skip
        """Import what the transcript gained since the last hook (what the model said before
        this tool ran, its usage, sub-agents). The importer skips the results this hook stored.
        A tool call's `held` events go in right after the transcript's record of the call (the
        importer puts them there: `has`, `put`), so the message that made the call comes
        before them in the store, as the model went. A failure of the import is recorded and
        the step goes on."""
        main = transcript_of(served, payload)
        if main is not None and held is not None and held.key is not None and (
                main.exists() or not served.extra.get("no_transcript")):  # fmt: skip
            # Before anything is read: the file may not even be there yet (the session's
            # first call), and its prompt is to come before the call's events. Waited for
            # once per session: the calls made meanwhile do not wait for it again.
            if await written(main, held.key[1]) is None and not main.exists():
                served.extra["no_transcript"] = True
            trace.lap("written")
        if main is None or not main.exists():  # a sub-agent's hook (its file is imported
            await self._calls.commit(held, trace)  # with its parent's), or no transcript
            return
        if not is_regular(main):
            # A FIFO, a device, a folder: never opened (an open of a FIFO waits for a writer,
            # and this process serves every session of the store). Said once per session.
            if not served.extra.get("odd_transcript"):
                served.extra["odd_transcript"] = True
                failures.record(self._store, "transcript", f"{main} is not a regular file; "
                                "the transcript is not imported", {"session_id": payload.get(
                                    "session_id")})  # fmt: skip
            await self._calls.commit(held, trace)
            return
        # The import puts the call's events right after its record; when the record did not
        # come in time (or the import failed), they go in after what the transcript holds.
        await self._take(served, main, payload, growing)
        trace.lap("transcript")
        await self._calls.commit(held, trace)

    async def _take(self, served: Served, main: Path, payload: dict[str, Any],
                               growing: bool) -> None:  # fmt: skip
        try:
            await self._import(served, main, served.session.id, growing)
            await self._link_agents(served, main)
            for f in sub_agents(main):
                agent = f.stem.removeprefix("agent-")
                sid = f"cc-{agent}"
                # The sub-agent's own hooks write that session too, in this lane, under the
                # tree's lock it holds; the session made here is a hooked one, so its hooked
                # results are skipped.
                if await self._writer.session_info(sid) is None:
                    await self._sessions.start(sid, {**payload, "agent_id": agent})
                await self._import(served, f, sid, growing)
            self._sessions.others_ids(served)  # the ids the import took (past the hook's own)
        except Exception as exc:  # the transcript is a bonus; the hook goes on
            failures.record(self._store, "transcript", f"{type(exc).__name__}: {exc}",
                            {"session_id": payload.get("session_id")})  # fmt: skip
            served.importers.clear()
        finally:
            self._calls.confirm()
            self._record_unreached(served)

    def _record_unreached(self, served: Served) -> None:
        """Claude Code's own records (in the transcript just read) of calls its http hooks did
        not get an answer for: the engine was not running, or not reachable. The model got
        Claude Code's own output for those; `ctxview doctor` lists them."""
        for importer in served.importers.values():
            hub = importer.hub
            if hub is None or not hub.hook_errors:
                continue
            found, hub.hook_errors = hub.hook_errors, []
            for e in found:
                ours = self._port is not None and f"127.0.0.1:{self._port}" in (
                    e["error"] + e["command"])  # fmt: skip
                if not ours:
                    continue  # another hook of the person's
                tool = e["hook"].split(":", 1)[1] if ":" in e["hook"] else ""
                call = e["tool_use_id"] if tool else ""  # else the id of a turn, not a call
                detail = {k: v for k, v in (("session_id", e["session_id"]), ("tool_name", tool),
                                            ("tool_use_id", call)) if v}  # fmt: skip
                failures.record(self._store, e["event"] or "?", f"Claude Code could not reach "
                                f"the hook engine ({e['error']}): the model got Claude Code's "
                                "own output", detail)  # fmt: skip

    async def _link_agents(self, served: Served, main: Path) -> None:
        """Sub-agents the transcript named (its Agent calls' results) and whose own session a
        hook made meanwhile: linked to their call. The import links one whose session exists
        when it reads the name; one made by its first hook while that import was under way
        (Claude Code runs a sub-agent beside its parent) is linked here."""
        importer = served.importers.get(main)
        agents = importer.hub.main.data.get("agents", {}) if importer and importer.hub else {}
        linked = served.extra.setdefault("linked", set())
        for agent, call in agents.items() if isinstance(agents, dict) else ():
            if agent in linked or not isinstance(call, str):
                continue
            info = await self._writer.session_info(f"cc-{agent}")
            if info is None:
                continue  # its first hook will find the link in the parent's data
            if info["parent_call"] != call:
                await self._writer.update_session(f"cc-{agent}", parent_session=served.session.id,
                                                 parent_call=call)  # fmt: skip
            linked.add(agent)

    async def _import(self, served: Served, path: Path, sid: str, growing: bool) -> None:
        importer = served.importers.get(path)
        if importer is None:
            importer = served.importers[path] = FileImporter(self._writer, path, held=self._calls)
            importer.commit_seconds = IMPORT_COMMIT_SECONDS
        elif importer.hub is not None:
            # Its engine and the hook's share the tree's id counter, through the store.
            importer.hub.main.session.advance_ids(self._sessions.next_rid(sid))
        async with self._writer.batch():
            await importer.step(live=growing)
