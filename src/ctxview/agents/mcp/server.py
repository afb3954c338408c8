"""`ctxview mcp`: the engine's tools as a stdio MCP server, for hosts whose built-in tools
cannot be rewritten (Codex) and for `recall` in a hooked Claude Code session.

One connection (one server process: stdio) is one host session. Which store session a call
writes to is decided per call, because a host tells who it is at different moments:

- `CTXVIEW_SESSION` in the environment: that session.
- Claude Code (it sets `CLAUDE_CODE_SESSION_ID` for the servers it starts): the hooked session
  `cc-<session_id>` that the hooks write (`agents.live.live_session`, the contract in
  `agents/__init__.py`). The hooks own its life: the server never ends it.
- Codex (each `tools/call` carries `_meta.sessionId`, the thread id its rollout file is named
  by): `cx-<id>`, the id `ctxview import` gives that rollout.
- Any other host: a session of the connection's own, `mcp-<time>-<hex>`.

Every call takes the session's write lock (`live.session_lock`), checks whether another process
wrote to the session since this one last did (its newest event seq), takes in what it wrote if
so (`Session.catch_up`: a call's cost does not grow with the session), runs the tool through
`Session.run` and commits before answering. The sessions this connection made live are
ended when it closes (stdin closed, SIGTERM or SIGINT), or, should the host kill the server
before that is done, by the process it starts beside it (`session_ender`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from ctxview.agents import failures, live
from ctxview.agents.claude_code.caller import calling_session
from ctxview.agents.mcp.session_ender import Ender
from ctxview.context import late_texts
from ctxview.engine.session import TOOLS, Session, new_session_id
from ctxview.prompts import CLAUDE, MCP, RECALL, Active, context_block
from ctxview.rules.elide import is_content_id
from ctxview.rules.ids import parse_id
from ctxview.store import Writer
from ctxview.store.probe import Probe, SqliteError
from ctxview.store.schema import StoreError

TOOL_SETS: dict[str, tuple[str, ...]] = {"recall": ("recall",), "all": TOOLS}
CODEX = "codex"  # importers.detect.CODEX, without importing the importers on this path

# What the model reads about each tool; the 3.0.0 forms of the answers are in the instructions.
DESCRIPTIONS = {
    "read": "Read a text file of the workspace: numbered lines under a bracket with its id, "
            "path, lines and hash. An unchanged re-read answers with a one-line stub naming the "
            "earlier result. offset is the first line (from 1), limit the number of lines.",
    "write": "Write a whole file (created or replaced); answers with a diff.",
    "edit": "Replace old_string with new_string in a file (exactly once, or every occurrence "
            "with replace_all); answers with a unified diff.",
    "multiedit": "Several edits to one file, in order, all or nothing; answers with one diff.",
    "apply_patch": "Apply a patch in the *** Begin Patch / *** End Patch form (Add File, "
                   "Update File, Delete File, Move to); answers with each file's diff.",
    "list": "List every file and folder below a path of the workspace.",
    "glob": "Files of the workspace matching a glob pattern such as src/**/*.py.",
    "grep": "Lines matching a regular expression in the workspace's files, as path:line:text. "
            "The same search with the same result again answers with a one-line stub.",
    "bash": "Run a shell command in the workspace; long output keeps its start and end with "
            "one line saying how many lines were elided and which id holds them in full.",
    "recall": "Show a stored result of this session again, in full: elided output, the lines "
              "a stub stands for, a diff, results from before a summary. id is the result's "
              "id with or without #; offset is the first line (from 1), limit the number.",
}  # fmt: skip


# Keys a host may put in a call's `_meta` for its own id of the call (Codex: `callId`): stored
# as the call's ref, so an import of the host's transcript can pair it with the stored result.
_CALL_KEYS = ("callId", "toolUseId", "tool_use_id", "claudecode/toolUseId")


class EditSpec(TypedDict):
    old_string: str
    new_string: str
    replace_all: NotRequired[bool]


@dataclass
class Connection:
    """The store sessions one MCP connection writes to, and what it knows of each."""

    store: Path
    workspace: Path
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    writer: Writer | None = None
    own_id: str | None = None
    # session id -> (the Session as this process left it, the session's last event seq then)
    cached: dict[str, tuple[Session, int]] = field(default_factory=dict)
    made_live: set[str] = field(default_factory=set)  # ended when the connection closes
    # Ends them should the process be killed first (the server's own, `serve`; none in process).
    ender: Ender | None = None
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _probe: Probe | None = None
    _closing: asyncio.Future[None] | None = None

    # Which session

    def session_for(self, meta: Mapping[str, Any], client: str) -> tuple[str, str]:
        """(store session id, its source) for a call with this `_meta` from this client. For
        Claude Code, the session at the top of its tree (`caller` tells which of the tree's
        conversations made the call)."""
        if sid := self.env.get("CTXVIEW_SESSION"):
            return sid, "live"
        if self.env.get("CLAUDE_CODE_SESSION_ID") or self.env.get("CLAUDECODE"):
            sid = live.live_session(self.store, live.CLAUDE, self.workspace)
            if sid:
                return sid, live.CLAUDE
        host_id = meta.get("sessionId") or meta.get("threadId")
        if (
            isinstance(host_id, str)
            and host_id
            and (client.startswith("codex") or "x-codex-turn-metadata" in meta)
        ):
            return f"cx-{host_id}", CODEX
        if self.own_id is None:
            self.own_id = f"mcp-{new_session_id()}"
        return self.own_id, "live"

    # One call

    async def call(self, tool: str, args: dict[str, Any], meta: Mapping[str, Any] | None = None,
                   client: str = "") -> str:  # fmt: skip
        """Run `tool` in the right session; the exact text the model is given."""
        meta = meta or {}
        root, source = self.session_for(meta, client)
        ref = next((str(meta[k]) for k in _CALL_KEYS if meta.get(k)), None)
        sid = root
        if source == live.CLAUDE and self.store.exists():
            # A sub-agent's call is its own session's (its ids are its tree's, as the root's).
            sid = await calling_session(self._connect(), root, ref)
        if tool == "recall":
            await self._text_on_its_way(sid, args.get("id"))
        lock = self.locks.setdefault(root, asyncio.Lock())
        # This process's own calls first (the asyncio lock), then other processes' (the flock),
        # for the whole tree: its sessions share one id counter.
        async with lock, live.session_lock(self.store, root):
            session = await self._session(sid, source, client, root)
            try:
                text = await session.run(tool, args, call_ref=ref)
            except BaseException:
                # Half a step may be in memory and not in the store: start again from it.
                self.cached.pop(sid, None)
                with contextlib.suppress(SqliteError):
                    session.ids.rewind(self._next_rid(sid))
                raise
            # The next call compares the store with this.
            self.cached[sid] = (session, self._last_seq(sid))
        return text

    async def _text_on_its_way(self, sid: str, given: Any) -> None:
        """A recall of a text the proxy elided may come before its recorder stored it
        (`context/late_texts.py`): wait for it here, before the tree's lock, which the hooks of
        the tree must not wait for meanwhile."""
        rid = parse_id(given) if isinstance(given, str) else None
        if rid is None or not is_content_id(rid) or not self.store.exists():
            return  # any other id is the store's own, there before it was given

        async def look() -> bool | None:
            return self._connect().has_body(sid, rid) or None

        with contextlib.suppress(SqliteError):
            await late_texts.stored(rid, look)

    async def _session(self, sid: str, source: str, client: str, root: str | None = None
                       ) -> Session:  # fmt: skip
        writer = await self._writer()
        cached = self.cached.get(sid)
        if cached is not None:
            session, seen = cached
            if seen != self._last_seq(sid):  # a hook (or an import) wrote since: catch up
                session.catch_up(self._connect().results_after(sid, seen), self._next_rid(sid))
            else:  # another session of its tree (a sub-agent's hook) may have taken ids
                session.advance_ids(self._next_rid(sid))
            return session
        info = await writer.session_info(sid)
        if info is None and root is not None and sid != root:
            session = await self._create_agent(writer, sid, root)
        elif info is None:
            session = await self._create(writer, sid, source, client)
        else:
            session = await Session.resume(writer, sid)
            if info["ended"] is not None and source != live.CLAUDE:
                await writer.update_session(sid, ended=None)  # the host resumed it
                self._made_live(sid)
        return session

    async def _create(self, writer: Writer, sid: str, source: str, client: str) -> Session:
        root = self.workspace.resolve()
        data: dict[str, Any] = {"via": "mcp", "client": client}
        if source in (live.CLAUDE, CODEX):
            # The ids the model saw are in this session: an import of the host's transcript
            # adds messages and usage to it and never re-numbers a result (agents/__init__.py).
            data["hooked"] = True
        title = f"{root.name} ({client})" if source == "live" and client else root.name
        fields: dict[str, Any] = {}
        if source == CODEX:
            # Where `ctxview import` / `follow` of this rollout will look for its session.
            thread = sid.removeprefix("cx-")
            fields = {"source_ref": thread, "source_path": rollout_path(self.env, thread)}
        session = await Session.start(writer, root, title=title, source=source, session_id=sid,
                                      data=json.dumps(data), **fields)  # fmt: skip
        if source != live.CLAUDE:  # a hooked session is ended by its SessionEnd hook
            self._made_live(sid)
        return session

    def _made_live(self, sid: str) -> None:
        self.made_live.add(sid)
        if self.ender is not None:
            self.ender.holds(sid)

    async def _create_agent(self, writer: Writer, sid: str, root: str) -> Session:
        """A sub-agent's session, made by its first call here (before any of its hooks): a
        hooked child of `root`, as the hooks and the importer name it."""
        info = await writer.session_info(root)
        agent = sid.removeprefix("cc-")
        transcript = Path(info["source_path"]) if info and info["source_path"] else None
        path = (transcript.with_suffix("") / "subagents" / f"agent-{agent}.jsonl"
                if transcript else None)  # fmt: skip
        call = json.loads(info["data"] or "{}").get("agents", {}).get(agent) if info else None
        root_dir = Path(info["workspace"]) if info and info["workspace"] else self.workspace
        return await Session.start(
            writer, root_dir, title=root_dir.name or "claude code", source=live.CLAUDE,
            session_id=sid, source_path=str(path) if path else None, source_ref=agent,
            parent_session=root, parent_call=call, data=json.dumps({"hooked": True}),
        )  # fmt: skip

    def _connect(self) -> Probe:
        if self._probe is None:
            self._probe = Probe.read_only(self.store, timeout=5, any_thread=True)
        return self._probe

    async def _writer(self) -> Writer:
        if self.writer is None:
            self.writer = await Writer.open(self.store)
        return self.writer

    def _last_seq(self, sid: str) -> int:
        """The session's newest event seq: one indexed lookup on a read-only connection."""
        return self._connect().last_seq(sid)

    def _next_rid(self, sid: str) -> int:
        """The next id of `sid`'s tree as stored (`store.tree`)."""
        return self._connect().next_rid(sid)

    # Closing

    async def close(self) -> None:
        """End the sessions this connection made live; close the store. Once: a host that closes
        stdin and signals at the same moment closes it twice, and a second close running beside
        the first would wait for the lock the first holds, then close the writer under it."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        try:
            for sid in sorted(self.made_live):
                lock = self.locks.setdefault(sid, asyncio.Lock())
                # A call still running (a long command) gets a moment to finish; then the
                # session ends regardless, the host is going.
                held = False
                with contextlib.suppress(TimeoutError):
                    held = await asyncio.wait_for(lock.acquire(), timeout=2)
                try:
                    async with live.session_lock(self.store, sid, timeout=5):
                        session = await self._session(sid, "", "")
                        await session.end()
                    if self.ender is not None:
                        self.ender.ended(sid)
                finally:
                    if held:
                        lock.release()
        finally:
            self.made_live.clear()
            if self.ender is not None:  # what is left (a failed end) the ender ends now
                self.ender.close()
            if self._probe is not None:
                self._probe.close()
                self._probe = None
            if self.writer is not None:
                await self.writer.close()
                self.writer = None


def rollout_path(env: Mapping[str, str], thread: str) -> str | None:
    """The rollout file Codex writes for `thread` (`$CODEX_HOME/sessions/Y/M/D/rollout-…-<id>
    .jsonl`), resolved; None when it is not there (yet)."""
    if not re.fullmatch(r"[0-9A-Za-z-]{1,80}", thread):
        return None
    home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else None
    if home is None:
        home = Path(env.get("HOME") or Path.home()) / ".codex"
    found = sorted((home.expanduser() / "sessions").glob(f"*/*/*/rollout-*-{thread}.jsonl"))
    return str(found[-1].resolve()) if found else None


def active(conn: Connection, tools: tuple[str, ...]) -> Active:
    """What the server's instructions describe (`prompts.claims`): with the whole set, its own
    tools (and the model is asked to work through them: a host's own tool answers outside the
    rules and the store; Codex 0.169.0 offers its own apply_patch whenever the model's catalog
    entry brings one, its shell off or on: tests/agents/test_codex_tools.py); started by Claude
    Code, what ctxview's hooks that are on there do to its tools; else recall alone."""
    if len(tools) > 1:
        return Active(MCP, tools=tools)
    if conn.env.get("CLAUDE_CODE_SESSION_ID") or conn.env.get("CLAUDECODE"):
        from ctxview.agents.claude_code.hooks import SAVED_PAST, SHOWS_AT_MOST
        from ctxview.agents.claude_code.install import active_events

        home = Path(conn.env.get("HOME") or Path.home())
        return Active(CLAUDE, hooks=active_events(conn.workspace, home),
                      shows_at_most=SHOWS_AT_MOST, saved_past=SAVED_PAST)  # fmt: skip
    return Active(RECALL)


def build_server(conn: Connection, tools: tuple[str, ...] = ("recall",)) -> MCPServer:
    """An MCP server offering `tools` (a subset of the engine's), each run through `conn`."""

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[Connection]:
        try:
            yield conn
        finally:
            with anyio.CancelScope(shield=True):  # a signal cancelled the server: end anyway
                await conn.close()

    server = MCPServer(
        "ctxview",
        instructions=context_block(active=active(conn, tools)),
        version=_version(),
        lifespan=lifespan,
    )

    async def run(tool: str, ctx: Context, **args: Any) -> str:
        rc = ctx.request_context
        params = rc.params or {}
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        client_params = rc.session.client_params
        client = client_params.client_info.name if client_params else ""
        given = {k: v for k, v in args.items() if v is not None}
        try:
            return await conn.call(tool, given, meta if isinstance(meta, Mapping) else {}, client)
        except live.LockTimeout:
            failures.record(conn.store, f"mcp {tool}", "the session's lock was held too long")
            raise McpToolError("ctxview: the session is busy with another writer; try the "
                               "call again.") from None  # fmt: skip
        except (SqliteError, StoreError, OSError) as exc:
            failures.record(conn.store, f"mcp {tool}", f"{type(exc).__name__}: {exc}")
            raise McpToolError(f"ctxview could not use its store ({exc}).") from None
        except Exception as exc:
            # A bug: the SDK answers "Error executing tool" and logs the traceback to stderr.
            failures.record(conn.store, f"mcp {tool}", f"{type(exc).__name__}: {exc}")
            raise

    async def read(path: str, ctx: Context, offset: int | None = None,
                   limit: int | None = None) -> str:  # fmt: skip
        return await run("read", ctx, path=path, offset=offset, limit=limit)

    async def write(path: str, content: str, ctx: Context) -> str:
        return await run("write", ctx, path=path, content=content)

    async def edit(path: str, old_string: str, new_string: str, ctx: Context,
                   replace_all: bool | None = None) -> str:  # fmt: skip
        return await run("edit", ctx, path=path, old_string=old_string, new_string=new_string,
                         replace_all=replace_all)  # fmt: skip

    async def multiedit(path: str, edits: list[EditSpec], ctx: Context) -> str:
        return await run("multiedit", ctx, path=path, edits=[dict(e) for e in edits])

    async def apply_patch(patch: str, ctx: Context) -> str:
        return await run("apply_patch", ctx, patch=patch)

    async def list_(ctx: Context, path: str | None = None) -> str:
        return await run("list", ctx, path=path)

    async def glob(pattern: str, ctx: Context, path: str | None = None) -> str:
        return await run("glob", ctx, pattern=pattern, path=path)

    async def grep(pattern: str, ctx: Context, path: str | None = None,
                   include: str | None = None, ignore_case: bool | None = None) -> str:  # fmt: skip
        return await run("grep", ctx, pattern=pattern, path=path, include=include,
                         ignore_case=ignore_case)  # fmt: skip

    async def bash(command: str, ctx: Context, timeout: float | None = None) -> str:
        return await run("bash", ctx, command=command, timeout=timeout)

    async def recall(id: str, ctx: Context, offset: int | None = None,
                     limit: int | None = None) -> str:  # fmt: skip
        return await run("recall", ctx, id=id, offset=offset, limit=limit)

    fns: dict[str, Callable[..., Awaitable[str]]] = {
        "read": read, "write": write, "edit": edit, "multiedit": multiedit,
        "apply_patch": apply_patch, "list": list_, "glob": glob, "grep": grep, "bash": bash,
        "recall": recall}  # fmt: skip
    for name in tools:
        # Plain text only: a structured copy would reach Codex's model as JSON, escaping the
        # newlines of the very text the rules shaped.
        server.add_tool(fns[name], name=name, description=DESCRIPTIONS[name],
                        structured_output=False)  # fmt: skip
    return server


def serve(store: Path, workspace: Path, tools: tuple[str, ...]) -> None:
    """Serve one connection over stdin/stdout until the host closes it (or signals)."""
    conn = Connection(store=store, workspace=workspace, ender=Ender(store))
    server = build_server(conn, tools)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        closing: list[asyncio.Task[None]] = []

        def stop() -> None:
            # A host that stops its server with a signal: the sessions end all the same. The
            # SDK's stdin reader is a thread blocked in a read, so the process exits from here.
            async def finish() -> None:
                try:
                    await conn.close()
                finally:
                    sys.stdout.flush()
                    os._exit(0)

            closing.append(loop.create_task(finish()))

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, stop)
        await server.run_stdio_async()

    anyio.run(main)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxview")
    except PackageNotFoundError:
        return "0"
