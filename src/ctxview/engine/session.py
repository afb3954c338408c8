"""The engine: a live session that applies context hygiene 3.0.0 as each result is inserted.

Its face, for a harness and for the rest of ctxview: `Session.start` over a store and a
workspace, then `run` (the engine executes the tool), `insert` (the harness ran it), `message`
and `compact`. Each returns the exact text the model is given, and every step is committed to
the store before it returns, so another process reading the store sees it at once.
The edit tools' changes and answer are built in `edits.py`; a result as built, in `result.py`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ctxview.context.state import ContextState, load_texts, render_context
from ctxview.engine import edits
from ctxview.engine.edits import EDIT_TOOLS
from ctxview.engine.result import Result, sha256_text
from ctxview.rules import brackets
from ctxview.rules.as_sent import Usage
from ctxview.rules.cap import cap, fit
from ctxview.rules.compaction import compaction_text
from ctxview.rules.config import Config
from ctxview.rules.dedupe import DedupeTable, ReadEntry, ResultEntry, args_key
from ctxview.rules.ids import format_id, parse_id
from ctxview.rules.lines import decode, looks_binary, numbered, split_lines, window_lines
from ctxview.store.reader import Reader
from ctxview.store.records import Body, Event
from ctxview.store.tree import IdSpace
from ctxview.store.writer import Writer
from ctxview.tools import ToolError
from ctxview.tools import bash as bash_tool
from ctxview.tools import search as search_tool
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
        self.writer = writer
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
        # The context as sent, kept in step with every event written (src/ctxview/context/state.py).
        self.context_state = ContextState(config)
        self._context_stale = False  # not fed during a batch (see `_append`): rebuild first
        self._jobs: list[bash_tool.Job] = []  # bash calls run with background, until `end`

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
            session._context_stale = True  # an import goes on: rebuilt only if asked for
        else:
            await session._replay_context()
        return session

    def catch_up(self, events: Iterable[Event], next_rid: int) -> None:
        """What other writers stored in this session since this process last wrote (a hook,
        recall over MCP, an import), for a process that keeps the session in memory: its
        results and compactions in order (`seq` after the last one seen) and the session's
        `next_rid`. The engine's state becomes what `resume` would build; the context as sent
        is rebuilt from the store when next asked for."""
        self._take_in(events)
        self.advance_ids(next_rid)
        self._context_stale = True

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
            elif ev.rkind == "full" and ev.tool == "read" and ev.sha and "key" in extra:
                self.dedupe.add_read(ReadEntry(ev.rid, extra["key"], ev.path or "",
                                               ev.line_from or 0, ev.line_to or 0,
                                               ev.line_total or 0, ev.sha))  # fmt: skip
            elif "text_sha" in extra and ev.rkind != "same":
                self.dedupe.add_result(
                    ResultEntry(ev.rid, ev.tool, extra["args_key"], extra["text_sha"])
                )
            if ev.sha and "key" in extra:
                self._known[extra["key"]] = (ev.sha, ev.rid)
            if ev.kind == "result" and ev.rid is not None:
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
            await self._append([call])
        try:
            result = await self._dispatch(tool, args)
        except ToolError as err:
            result = self._error(tool, err)
        except (OSError, ValueError) as err:  # decision 10: a tool's failure is a result
            detail = (err.strerror if isinstance(err, OSError) else None) or str(err)
            result = self._error(tool, ToolError("error.failed", detail=detail.rstrip(".")))
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
    ) -> str:
        """Insert the result of a tool the harness ran itself (any name): it gets an id, is stored
        in full, capped, and for the `dedupe.by_result` tools compared with earlier results.

        `shows_at_most`, for a host that cuts a longer result itself: the cap is fitted to it
        (`cap.fit`), so the elision line reaches the model."""
        args = dict(args or {})
        ref = call_ref or self._call_ref()
        ts = ts if ts is not None else time.time()
        bounds = self.config if shows_at_most is None else fit(self.config, shows_at_most)
        if tool in self.config["dedupe.by_result"]:
            if note:  # the note is part of what is compared: a new warning shows in full
                output = f"{output}\n{note}" if output else note
            result = self._by_result(tool, args, output, bounds)
        else:
            result = self._generic(tool, output, note=note, bounds=bounds)
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
    ) -> str:
        """Insert a read the harness made (an importer knows the lines, their range, the file's
        length and a hash standing for its content): the same §1/§2 rules as `run("read")`.

        `host_form`, for a host that shows a read in a form of its own (Claude Code numbers the
        lines itself): from the result as the rules built it (its `rkind`, its `shown`), the
        text the model is given instead; that text is what is stored as shown and returned."""
        ref = call_ref or self._call_ref()
        ts = ts if ts is not None else time.time()
        result = self._read_result(path, key, first, lines, total, sha)
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
        result = self._generic(tool, output)
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
        result = self._edit_result(tool, changes, notes=[note] if note else [])
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
        await self._append([Event(
            ts=ts if ts is not None else time.time(), kind="message", role=role, text=text,
            data=json.dumps(data) if data else None,
        )])  # fmt: skip

    async def usage(self, input_tokens: int = 0, output_tokens: int = 0,
                    cache_read_tokens: int = 0, cache_write_tokens: int = 0, *,
                    ts: float | None = None) -> None:  # fmt: skip
        """The usage of the latest request, for a harness that reports it apart from the reply."""
        u = Usage(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
        await self._append([Event(ts=ts if ts is not None else time.time(), kind="usage",
                                  data=json.dumps({"usage": u.as_dict()}))])  # fmt: skip

    async def context(self) -> list[dict[str, Any]]:
        """The exact messages the model is sent at the next request, compaction and elision
        applied: `{"role", "text", "calls"?: [{"id", "tool", "args"}], "call_id"?, "rid"?}`.
        With `elide.enabled`, asking may move the window a stride (stored as an `elide` event)."""
        await self._context_step()
        return [m.as_json() for m in self.context_state.msgs]

    async def context_text(self) -> str:
        """The same context serialised (`role: text`, calls on their own lines), as the
        conformance cases and the threshold measure it."""
        await self._context_step()
        return render_context(self.context_state.msgs)

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
        await self._append([Event(
            ts=ts if ts is not None else time.time(), kind="compaction", text=summary,
            data=json.dumps(extra),
        )])  # fmt: skip
        return text

    async def end(self, *, ts: float | None = None) -> None:
        await self.stop_background()
        ts = ts if ts is not None else time.time()
        await self._append([Event(ts=ts, kind="end")])
        await self.writer.update_session(self.id, ended=ts)

    async def stop_background(self) -> None:
        """End every process a `bash` call with `background` left running (`end` does)."""
        jobs, self._jobs = self._jobs, []
        for job in jobs:
            await job.stop()

    def ref(self, rid: int) -> str:
        return format_id(rid, self.config["ids.digits"])

    @property
    def next_rid(self) -> int:
        """The id the next result gets (the tree's counter, `ids`)."""
        return self.ids.next

    # Building results

    def _take_id(self) -> int:
        # Taken by this session's writer: a rewind gives back only that writer's ids.
        return self.ids.take(self.writer)

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
        await self._append(events, [Body(result.rid, result.shown, result.stored)])
        self.last = result

    # The context as sent

    async def _append(self, events: list[Event], bodies: list[Body] | None = None) -> None:
        """Write one step, keeping the context as sent in step with it: a stride the window takes
        at a request's start is written just before the event that starts it, and a compaction
        that became due (`compaction.above_tokens`) just after the step."""
        state = self.context_state
        if state.inert and self.writer.batching:
            # An import: with no elision and no compaction threshold the state adds no event,
            # so it is not kept in step (a tenth of the import's time); `context()` rebuilds it
            # from the store if it is ever asked for.
            self._context_stale = True
            await self.writer.append(self.id, events, bodies or [],
                                     fts_max_chars=self.config["fts.max_chars"])  # fmt: skip
            return
        out: list[Event] = []
        due = False
        for ev in events:
            if state.starts_request(ev) and (stride := self._stride_event(ev.ts)):
                out.append(stride)
            # Results' texts are not held in memory (an import may be huge): `context()` loads
            # the ones it sends from the store.
            due = state.feed(ev) or due
            out.append(ev)
        if due:
            out.append(Event(ts=out[-1].ts, kind="compact_due", data=json.dumps({
                "request": len(state.requests), "tokens": state.tokens(),
                "above_tokens": state.above_tokens})))  # fmt: skip
        await self.writer.append(self.id, out, bodies or [],
                                 fts_max_chars=self.config["fts.max_chars"])  # fmt: skip

    def _stride_event(self, ts: float) -> Event | None:
        """Move the elision window for the next request; the `elide` event when it elided."""
        state = self.context_state
        rids = state.advance()
        if not rids:
            return None
        data = {"request": len(state.requests) + 1, "boundary": state.boundary, "rids": rids}
        return Event(ts=ts, kind="elide", data=json.dumps(data))

    async def _context_step(self) -> None:
        if self._context_stale:
            self.context_state = ContextState(self.config)
            await self._replay_context()
            self._context_stale = False
        if stride := self._stride_event(time.time()):
            await self.writer.append(self.id, [stride])
        await load_texts(self.context_state.msgs, self._shown_texts)

    async def _shown_texts(self, rids: list[int]) -> dict[int, str]:
        """Results' shown text from the store (after a resume, the state holds sizes only)."""
        await self.writer.flush()
        out: dict[int, str] = {}
        async with await Reader.open(self.writer.path) as reader:
            for i in range(0, len(rids), 500):
                out.update(await reader.shown(self.id, rids[i : i + 500]))
        return out

    async def _replay_context(self) -> None:
        await self.writer.flush()
        async with await Reader.open(self.writer.path) as reader:
            after = 0
            while page := await reader.events(self.id, after=after, limit=5000):
                for ev in page:
                    self.context_state.feed(ev)
                after = page[-1].seq

    async def _dispatch(self, tool: str, args: dict[str, Any]) -> Result:
        if tool == "read":
            return self._read(args)
        if tool in EDIT_TOOLS:
            return self._edit(tool, args)
        if tool in ("list", "glob", "grep"):
            return self._by_result(tool, args, await self._search(tool, args))
        if tool == "bash":
            return await self._bash(args)
        if tool == "recall":
            return await self._recall(args)
        raise ToolError("error.unknown_tool", tool=tool)

    def _error(self, tool: str, err: ToolError) -> Result:
        rid = self._take_id()
        sentence = self.config.text(err.key, **err.fields)
        return Result(rid, tool, brackets.with_sentence(brackets.plain(self.ref(rid)), sentence),
                      sentence, "error")  # fmt: skip

    def _generic(self, tool: str, output: str, note: str | None = None,
                 bounds: Config | None = None) -> Result:  # fmt: skip
        """§1 and §3: `[#id]`, a newline, the output, capped on the way in (by `bounds`, the
        session's config unless a host's limit fitted it)."""
        if not isinstance(output, str):
            output = str(output)
        if note:
            output = f"{output}\n{note}" if output else note
        rid = self._take_id()
        ref = self.ref(rid)
        capped = cap(output, ref, bounds or self.config)
        if capped is None:
            body = output.replace("\r\n", "\n") if "\r" in output else output
            return Result(rid, tool, brackets.with_body(brackets.plain(ref), body), output, "full")
        return Result(rid, tool, brackets.with_body(brackets.plain(ref), capped.text), output,
                      "full", capped=True, elided_lines=capped.elided)  # fmt: skip

    def _by_result(self, tool: str, args: dict[str, Any], output: str,
                   bounds: Config | None = None) -> Result:  # fmt: skip
        """§6: the same arguments and the same text as a result in the dedupe table: a stub."""
        key = args_key(args)
        text_sha = sha256_text(output)
        hit = self.dedupe.same_result(tool, key, text_sha)
        if hit is not None:
            rid = self._take_id()
            shown = brackets.with_sentence(
                brackets.plain(self.ref(rid)),
                self.config.text("text.same_result", ref=self.ref(hit.rid)),
            )
            return Result(rid, tool, shown, output, "same", points_to=hit.rid,
                          data={"args_key": key, "text_sha": text_sha})  # fmt: skip
        result = self._generic(tool, output, bounds=bounds)
        result.data = {"args_key": key, "text_sha": text_sha}
        self.dedupe.add_result(ResultEntry(result.rid, tool, key, text_sha))
        return result

    # read

    def _read(self, args: dict[str, Any]) -> Result:
        path = args.get("path", args.get("file_path"))
        offset = _whole(args.get("offset", 1), "offset")
        window = self.config["window.lines"]
        limit = min(_whole(args.get("limit", window), "limit"), window)
        key, data = self.workspace.read_bytes(path)  # type: ignore[arg-type]
        sha = hashlib.sha256(data).hexdigest()
        if looks_binary(data):
            rid = self._take_id()
            sentence = self.config.text("text.binary", size=len(data))
            bracket = brackets.read_binary(self.ref(rid), path, sha[: self.config["sha_digits"]])
            return Result(rid, "read", brackets.with_sentence(bracket, sentence), sentence,
                          "binary", path=path, sha=sha, data={"key": key})  # fmt: skip
        lines, total = window_lines(data, offset, limit)  # only the window is decoded
        if (total == 0 and offset > 1) or (total > 0 and offset > total):
            raise ToolError("error.offset_past_end", offset=offset, path=path, n=total)
        return self._read_result(path, key, offset, lines, total, sha)

    def _read_result(self, path: str, key: str, first: int, shown_lines: list[str], total: int,
                     sha: str) -> Result:  # fmt: skip
        """§1 and §2: a full read, or a stub when an earlier full read already shows the lines."""
        rid = self._take_id()
        ref, sha8 = self.ref(rid), sha[: self.config["sha_digits"]]
        facts: dict[str, Any] = {"path": path, "sha": sha, "line_total": total}
        self._known[key] = (sha, rid)
        if total == 0:
            # An empty file is never a stub: its full answer is as short as one.
            self.dedupe.add_read(ReadEntry(rid, key, path, 0, 0, 0, sha))
            return Result(rid, "read", brackets.read_empty(ref, path, sha8), "", "full",
                          line_from=0, line_to=0, data={"key": key}, **facts)  # fmt: skip
        last = first + len(shown_lines) - 1
        body = numbered(shown_lines, first)
        bracket = brackets.read(ref, path, first, last, total, sha8)
        hit = self.dedupe.unchanged(key, sha, first, last)
        if hit is not None:
            sentence = self.config.text(
                "text.unchanged", ref=self.ref(hit.rid), lines=f"{hit.first}-{hit.last}"
            )
            return Result(rid, "read", brackets.with_sentence(bracket, sentence), body,
                          "unchanged", points_to=hit.rid, line_from=first, line_to=last,
                          data={"key": key}, **facts)  # fmt: skip
        self.dedupe.add_read(ReadEntry(rid, key, path, first, last, total, sha))
        return Result(rid, "read", brackets.with_body(bracket, body), body, "full",
                      line_from=first, line_to=last, data={"key": key}, **facts)  # fmt: skip

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
            self._jobs.append(done.job)
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
        result = self._generic("bash", output)
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
            await self.writer.tree_stored_data(self.id, target)
            if target is not None and target < self.ids.next
            else None
        )
        if stored is None:
            rid = self._take_id()
            sentence = self.config.text("text.no_result", ref="#" + given.lstrip("#").lower())
            return Result(rid, "recall", brackets.with_sentence(brackets.plain(self.ref(rid)),
                          sentence), sentence, "error")  # fmt: skip
        assert target is not None
        if isinstance(stored, bytes):  # a body written in pieces: decode only the window
            lines, total = window_lines(stored, offset, limit)
        else:
            every = split_lines(stored)
            lines, total = every[offset - 1 : offset - 1 + limit], len(every)
        if (total == 0 and offset > 1) or (total > 0 and offset > total):
            raise ToolError("error.recall_offset_past_end", offset=offset, ref=self.ref(target),
                            n=total)  # fmt: skip
        rid = self._take_id()
        ref, tref = self.ref(rid), self.ref(target)
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
        notes = edits.outside_notes(changes, self._known, self.config)
        edits.commit(changes, self.workspace)  # all checks passed: now the workspace changes
        return self._edit_result(tool, changes, notes)

    def _edit_result(self, tool: str, changes: list[edits.Change], notes: list[str]) -> Result:
        result = edits.edit_result(self._take_id(), tool, changes, notes, self.config)
        edits.remember(self._known, result.data["files"], result.rid)
        return result


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError("error.bad_args", detail=f"{name} must be a whole number from 1")
    return value
