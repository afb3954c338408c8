"""The engine: a live session that applies context hygiene 3.0.0 as each result is inserted.

Its face, for a harness and for the rest of ctxview: `Session.start` over a store and a
workspace, then `run` (the engine executes the tool), `insert` (the harness ran it), `message`
and `compact`. Each returns the exact text the model is given, and every step is committed to
the store before it returns, so another process reading the store sees it at once.
The edit tools' changes and answer are built in `edits.py`; a result as built, in `result.py`.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ctxview.context.state import ContextState, render_context
from ctxview.engine import edits
from ctxview.engine.own_tools import OwnTools
from ctxview.engine.result import Result
from ctxview.engine.rule_results import RuleResults
from ctxview.engine.sent_context import SentContext
from ctxview.rules.as_sent import Usage
from ctxview.rules.cap import fit
from ctxview.rules.compaction import compaction_text
from ctxview.rules.config import Config
from ctxview.rules.dedupe import DedupeTable, ReadEntry, ResultEntry
from ctxview.rules.ids import format_id
from ctxview.store.records import Body, Event
from ctxview.store.tree import IdSpace
from ctxview.store.writer import Writer
from ctxview.tools import ToolError
from ctxview.tools.workspace import Workspace

TOOLS = ("read", "write", "edit", "multiedit", "apply_patch", "list", "glob", "grep", "bash",
         "recall")  # fmt: skip


def new_session_id() -> str:
    """Sortable and readable: `20261129-184455-3fa2c1`."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Session:
    """A session over a workspace, writing to a store. Use `start` or `resume`."""

    def __init__(
        self,
        writer: Writer,
        session_id: str,
        workspace: Path,
        config: Config,
        next_rid: int,
        dedupe: DedupeTable | None = None,
        known: dict[str, tuple[str, int]] | None = None,
        ids: IdSpace | None = None,
    ) -> None:
        self._writer = writer
        self.id = session_id
        self.workspace = Workspace(workspace)
        self.config = config
        self.dedupe = dedupe or DedupeTable()
        # The id counter of the session's tree (it and its sub-agents), shared by every Session
        # of that tree over one writer (`Writer.id_space`).
        self.ids = ids or IdSpace(session_id, next_rid)
        self.ids.advance(next_rid)
        # path -> (sha, id) of the newest content this session has seen there, for the
        # "changed outside this session" note on an edit.
        self._known: dict[str, tuple[str, int]] = known or {}
        self.last: Result | None = None
        self._calls = 0
        # The context as sent, kept in step with every event written (engine/sent_context.py).
        self.sent = SentContext(writer, session_id, config)
        self.results = RuleResults(writer, config, self.ids, self.dedupe, self._known)
        self.tools = OwnTools(self.results, self.workspace, writer, session_id)

    @property
    def writer(self) -> Writer:
        return self._writer

    @writer.setter
    def writer(self, writer: Writer) -> None:
        """A host may write one step through a writer of its own (the hook engine holds a call's
        events until its transcript record is stored): the collaborators write through it too."""
        self._writer = self.sent.writer = self.results.writer = self.tools.writer = writer

    # Opening

    @classmethod
    async def start(
        cls,
        writer: Writer,
        workspace: Path | str,
        *,
        title: str = "",
        config: dict[str, Any] | None = None,
        source: str = "live",
        session_id: str | None = None,
        started: float | None = None,
        **session_fields: Any,
    ) -> Session:
        cfg = Config(config)
        sid = session_id or new_session_id()
        root = Path(workspace).resolve()
        # A sub-agent takes its ids from its tree's counter, past every id the tree gave.
        ids = await writer.id_space(session_fields.get("parent_session") or sid)
        ids.advance(cfg["ids.first"])
        await writer.create_session(
            sid,
            title=title or root.name,
            workspace=str(root),
            source=source,
            config=json.dumps(cfg.overrides, sort_keys=True),
            next_rid=ids.next,
            started=started,
            **session_fields,
        )
        return cls(writer, sid, root, cfg, ids.next, ids=ids)

    @classmethod
    async def resume(cls, writer: Writer, session_id: str) -> Session:
        """Carry on a stored session after a restart: the id counter and the dedupe table as they
        were (the table is rebuilt from the results since the last compaction)."""
        state = await writer.session_state(session_id)
        cfg = Config(json.loads(state["config"]))
        ids = await writer.id_space(session_id)
        session = cls(writer, session_id, Path(state["workspace"]), cfg, state["next_rid"],
                      ids=ids)  # fmt: skip
        session._take_in(state["events"])
        if session.context_state.inert and writer.batching:
            session.sent.stale = True  # an import goes on: rebuilt only if asked for
        else:
            await session.sent.replay()
        return session

    def catch_up(self, events: Iterable[Event], next_rid: int) -> None:
        """What other writers stored in this session since this process last wrote (a hook,
        recall over MCP, an import), for a process that keeps the session in memory: its
        results and compactions in order (`seq` after the last one seen) and the session's
        `next_rid`. The engine's state becomes what `resume` would build; the context as sent
        is rebuilt from the store when next asked for."""
        self._take_in(events)
        self.advance_ids(next_rid)
        self.sent.stale = True

    def advance_ids(self, next_rid: int) -> None:
        """Another writer of this session's tree (an import beside a hook, the MCP server) took
        ids up to `next_rid` (the tree's stored next id, `store.tree.next_rid`): the next id
        this one gives is not below it."""
        self.ids.advance(next_rid)

    def _take_in(self, events: Iterable[Event]) -> None:
        """Stored results and compactions into the dedupe table (rebuilt from the results since
        the last compaction) and the newest content seen at each path."""
        for ev in events:
            extra = json.loads(ev.data) if ev.data else {}
            if ev.kind == "compaction":
                self.dedupe.clear()
            if ev.rid is None:  # the rest is about results, and every result has an id
                continue
            # A read the model got whole from its host (`insert_read(whole=True)`) is no entry.
            if (ev.rkind == "full" and ev.tool == "read" and ev.sha and "key" in extra
                    and not extra.get("whole")):  # fmt: skip
                self.dedupe.add_read(ReadEntry(ev.rid, extra["key"], ev.path or "",
                                               ev.line_from or 0, ev.line_to or 0,
                                               ev.line_total or 0, ev.sha))  # fmt: skip
            elif "text_sha" in extra and ev.rkind != "same":
                self.dedupe.add_result(
                    ResultEntry(ev.rid, ev.tool or "", extra["args_key"], extra["text_sha"])
                )
            if ev.sha and extra.get("own") and "key" in extra:  # a stand-in says nothing
                self._known[extra["key"]] = (ev.sha, ev.rid)
            if ev.kind == "result":
                # An edit's files: what the session itself wrote there (no "changed outside"
                # note for its own edits after a restart).
                edits.remember(self._known, extra.get("files", []), ev.rid)

    # The face

    async def run(self, tool: str, args: dict[str, Any] | None = None, *,
                  call_ref: str | None = None) -> str:  # fmt: skip
        """Run one of the engine's tools and insert its result; the text the model is given."""
        args = dict(args or {})
        ref = call_ref or self._call_ref()
        ts = time.time()
        call = self._call_event(ts, tool, args, ref)
        # A command may run long: its call is committed first, so a viewer shows it running.
        # The other tools answer at once: call and result go in one transaction (one commit
        # less per result, a quarter of a typical read's time).
        early = tool == "bash"
        if early:
            await self.sent.write([call])
        try:
            result = await self.tools.run(tool, args)
        except ToolError as err:
            result = self.results.error(tool, err)
        except (OSError, ValueError) as err:  # decision 10: a tool's failure is a result
            detail = (err.strerror if isinstance(err, OSError) else None) or str(err)
            result = self.results.error(tool, ToolError("error.failed", detail=detail.rstrip(".")))
        await self._store(result, ref, None, time.time(), call=None if early else call)
        return result.shown

    async def insert(
        self,
        tool: str,
        args: dict[str, Any] | None,
        output: str,
        *,
        call_ref: str | None = None,
        note: str | None = None,
        seen: int | None = None,
        ts: float | None = None,
        shows_at_most: int | None = None,
        whole: bool = False,
    ) -> str:
        """Insert the result of a tool the harness ran itself (any name): it gets an id, is stored
        in full, capped, and for the `dedupe.by_result` tools compared with earlier results.

        `shows_at_most`, for a host that cuts a longer result itself: the cap is fitted to it
        (`cap.fit`), so the elision line reaches the model. `whole`: the model already got this
        result whole from its host (a call the host's hook missed): never the same-result stub,
        and no entry a later result is compared with, as `insert_read(whole=True)`."""
        args = dict(args or {})
        ref = call_ref or self._call_ref()
        ts = ts if ts is not None else time.time()
        bounds = self.config if shows_at_most is None else fit(self.config, shows_at_most)
        if tool in self.config["dedupe.by_result"] and not whole:
            if note:  # the note is part of what is compared: a new warning shows in full
                output = f"{output}\n{note}" if output else note
            result = self.results.by_result(tool, args, output, bounds)
        else:
            result = self.results.generic(tool, output, note=note, bounds=bounds)
        await self._store(result, ref, seen, ts, call=self._call_event(ts, tool, args, ref))
        return result.shown

    async def insert_read(
        self,
        args: dict[str, Any],
        path: str,
        key: str,
        first: int,
        lines: list[str],
        total: int,
        sha: str,
        *,
        call_ref: str | None = None,
        seen: int | None = None,
        ts: float | None = None,
        host_form: Callable[[Result], str] | None = None,
        own: bool = False,
        whole: bool = False,
    ) -> str:
        """Insert a read the harness made (an importer knows the lines, their range, the file's
        length and a hash standing for its content): the same §1/§2 rules as `run("read")`.

        `own`: `sha` is the SHA-256 of the file's bytes, not a stand-in; only such a hash is
        the content the "changed outside" note compares with. `whole`: the model already got
        this read whole from its host (a call the host's hook missed): stored in full, never a
        stub, and no entry of the dedupe table (no stub points at it, no files-read row).

        `host_form`, for a host that shows a read in a form of its own (Claude Code numbers the
        lines itself): from the result as the rules built it (its `rkind`, its `shown`), the
        text the model is given instead; that text is what is stored as shown and returned."""
        ref = call_ref or self._call_ref()
        ts = ts if ts is not None else time.time()
        result = self.results.read_result(path, key, first, lines, total, sha, own=own,
                                          whole=whole)  # fmt: skip
        if host_form is not None:
            result.shown = host_form(result)
        await self._store(result, ref, seen, ts, call=self._call_event(ts, "read", args, ref))
        return result.shown

    async def insert_beside(
        self,
        tool: str,
        args: dict[str, Any] | None,
        output: str,
        line: Callable[[str], str],
        *,
        call_ref: str | None = None,
        seen: int | None = None,
        ts: float | None = None,
    ) -> str:
        """Insert the output of a tool whose host keeps giving the model its own rendering and
        only lets a harness add a line beside it (Claude Code: a failed call's error, an output
        of a shape that cannot be replaced). The output gets an id and is stored in full, never
        compared with earlier results; what the model is given, stored as shown and returned,
        is `line(ref)` for its id `ref` (`#1a2b`)."""
        args = dict(args or {})
        ref = call_ref or self._call_ref()
        ts = ts if ts is not None else time.time()
        result = self.results.generic(tool, output)
        result.shown = line(self.ref(result.rid))
        await self._store(result, ref, seen, ts, call=self._call_event(ts, tool, args, ref))
        return result.shown

    async def insert_edit(
        self,
        tool: str,
        args: dict[str, Any],
        files: list[tuple[str, str, str | None, str | None]],
        *,
        call_ref: str | None = None,
        note: str | None = None,
        seen: int | None = None,
        ts: float | None = None,
    ) -> str:
        """Insert an edit the harness made: per file (path, key, old text or None for a new
        file, new text or None for a deletion), answered with the diff as `run` would; a note
        the tool added (a warning, say) follows the diff (§5)."""
        ref = call_ref or self._call_ref()
        ts = ts if ts is not None else time.time()
        changes = [edits.Change(path, key, old, new) for path, key, old, new in files]
        result = self.results.edit_result(tool, changes, notes=[note] if note else [])
        await self._store(result, ref, seen, ts, call=self._call_event(ts, tool, args, ref))
        return result.shown

    async def message(self, role: str, text: str, *, ts: float | None = None,
                      data: dict[str, Any] | None = None,
                      usage: Usage | dict[str, int] | None = None) -> None:  # fmt: skip
        """A message of the conversation. An assistant message starts a request (the model's
        reply); `usage` is that request's usage, in Claude's additive counting (input excludes
        cache reads and writes; see `rules.context.subset_usage` for OpenAI's)."""
        if usage is not None:
            u = usage if isinstance(usage, Usage) else Usage.from_dict(usage) or Usage()
            data = {**(data or {}), "usage": u.as_dict()}
        await self.sent.write([Event(
            ts=ts if ts is not None else time.time(), kind="message", role=role, text=text,
            data=json.dumps(data) if data else None,
        )])  # fmt: skip

    async def usage(self, input_tokens: int = 0, output_tokens: int = 0,
                    cache_read_tokens: int = 0, cache_write_tokens: int = 0, *,
                    ts: float | None = None) -> None:  # fmt: skip
        """The usage of the latest request, for a harness that reports it apart from the reply."""
        u = Usage(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
        await self.sent.write([Event(ts=ts if ts is not None else time.time(), kind="usage",
                                  data=json.dumps({"usage": u.as_dict()}))])  # fmt: skip

    async def context(self) -> list[dict[str, Any]]:
        """The exact messages the model is sent at the next request, compaction and elision
        applied: `{"role", "text", "calls"?: [{"id", "tool", "args"}], "call_id"?, "rid"?}`.
        With `elide.enabled`, asking may move the window a stride (stored as an `elide` event)."""
        await self.sent.step()
        return [m.as_json() for m in self.context_state.msgs]

    async def context_text(self) -> str:
        """The same context serialised (`role: text`, calls on their own lines), as the
        conformance cases and the threshold measure it."""
        await self.sent.step()
        return render_context(self.context_state.msgs)

    @property
    def context_state(self) -> ContextState:
        """The context as sent, as of the last event written or read back."""
        return self.sent.state

    @property
    def compact_due(self) -> bool:
        """`compaction.above_tokens` was passed at a user or tool-result boundary since the last
        compaction: the harness should compact now."""
        return self.context_state.compact_due

    async def compact(self, summary: str, *, ts: float | None = None,
                      data: dict[str, Any] | None = None) -> str:  # fmt: skip
        """§7: the summary and the files-read table; the dedupe table is emptied."""
        reads = self.dedupe.newest_reads(self.config["compaction.rows"])
        text = compaction_text(summary, reads, self.config)
        rows = [
            {"path": r.shown_path, "first": r.first, "last": r.last, "total": r.total,
             "sha": r.sha, "rid": r.rid}
            for r in reads
        ]  # fmt: skip
        extra = {"rows": rows, "inserted": text, **(data or {})}
        self.dedupe.clear()
        await self.sent.write([Event(
            ts=ts if ts is not None else time.time(), kind="compaction", text=summary,
            data=json.dumps(extra),
        )])  # fmt: skip
        return text

    async def end(self, *, ts: float | None = None) -> None:
        await self.stop_background()
        ts = ts if ts is not None else time.time()
        await self.sent.write([Event(ts=ts, kind="end")])
        await self.writer.update_session(self.id, ended=ts)

    async def stop_background(self) -> None:
        """End every process a `bash` call with `background` left running (`end` does)."""
        await self.tools.stop_background()

    def ref(self, rid: int) -> str:
        return format_id(rid, self.config["ids.digits"])

    def key(self, path: str) -> str:
        """A path as the rules compare it (`Workspace.key`), for a host's call."""
        return self.workspace.key(path)

    @property
    def next_rid(self) -> int:
        """The id the next result gets (the tree's counter, `ids`)."""
        return self.ids.next

    # Building results

    def _call_ref(self) -> str:
        self._calls += 1
        return f"c{self._calls}-{secrets.token_hex(3)}"

    @staticmethod
    def _call_event(ts: float, tool: str, args: dict[str, Any], ref: str) -> Event:
        return Event(ts=ts, kind="call", tool=tool, call_ref=ref,
                     args=json.dumps(args, ensure_ascii=False, default=str))  # fmt: skip

    async def _store(self, result: Result, call_ref: str, seen: int | None, ts: float,
                     call: Event | None = None) -> None:  # fmt: skip
        events = [call] if call else []
        events.append(result.event(ts, call_ref, seen))
        await self.sent.write(events, [Body(result.rid, result.shown, result.stored)])
        self.last = result

    # The context as sent
