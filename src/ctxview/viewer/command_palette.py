"""The command palette's provider: ids, paths and tools of the open session (or, on the sessions
list, the sessions), each a hit that jumps there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from ctxview.rules.config import Config
from ctxview.rules.ids import format_id, parse_id
from ctxview.store.records import SessionRow
from ctxview.viewer.messages import Jump, OpenResult, OpenSession

# How many of the newest results are matched by their call's words (ids and paths of older
# ones are still found: an id exactly, a path through its facet).
RECENT = 500
DISCOVER = 12
EXPORT = "Export session"
EXPORT_HELP = "one self-contained HTML file, secrets redacted"


def export_path(session_id: str) -> Path:
    """Where the palette's export goes: $CTXVIEW_EXPORT_DIR, else the current folder."""
    folder = Path(os.environ.get("CTXVIEW_EXPORT_DIR") or Path.cwd())
    return folder / (re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:120] + ".html")


def run_export(app: Any, store: Path, session_id: str) -> None:
    """In a thread worker: `ctxview export` as its own process (the viewer imports none of the
    export code), then a notification that says where the file went, or why there is none."""
    out = export_path(session_id)
    cmd = [sys.executable, "-m", "ctxview.cli", "--store", str(store), "export",
           session_id, "-o", str(out)]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        app.call_from_thread(app.notify, f"The export could not run: {exc}.", title=EXPORT,
                             severity="error", markup=False)  # fmt: skip
        return
    if done.returncode == 0:
        said = done.stdout.strip().removeprefix("Wrote ")
        app.call_from_thread(app.notify, f"Exported to {said}", title=EXPORT, timeout=15,
                             markup=False)  # fmt: skip
    else:
        why = done.stderr.strip().splitlines()[-1:] or ["it failed"]
        app.call_from_thread(app.notify, why[0].removeprefix("ctxview: "), title=EXPORT,
                             severity="error", markup=False)  # fmt: skip


def scaled(score: float, low: float, high: float) -> float:
    """Textual's fuzzy scores have no upper bound; squeeze them into (low, high) so an exact id
    (1.0) always leads, then paths and tools, then single results."""
    return low + (high - low) * score / (score + 5.0)


def describe_args(tool: str | None, args_json: str | None, width: int = 70) -> str:
    """A call's arguments in a few words: the command, the path, the pattern, the id."""
    try:
        args = json.loads(args_json) if args_json else {}
    except ValueError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    for key in ("command", "path", "file_path", "pattern", "id", "description", "query"):
        value = args.get(key)
        if isinstance(value, str) and value:
            text = " ".join(value.split())
            break
    else:
        text = json.dumps(args, ensure_ascii=False) if args else ""
    return text if len(text) <= width else text[: width - 1] + "…"


class IdsProvider(Provider):
    """Finds, in the session open on the screen the palette was called from: a result by id
    (`#1a2b` or `1a2b`), a path (jumps to its newest result), a tool (its newest result), and the
    newest results by the words of their calls. On the sessions list it finds sessions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session_id: str | None = None
        self.digits = 4
        self.paths: list[tuple[str, int, int]] = []
        self.tools: list[tuple[str, int, int]] = []
        self.recent: list[tuple[int, str, str]] = []  # (rid, text to match, help)
        self.sessions: list[SessionRow] = []

    @property
    def reader(self) -> Any:
        return getattr(self.app, "reader", None)

    async def startup(self) -> None:
        reader = self.reader
        if reader is None:
            return
        self.session_id = getattr(self.screen, "session_id", None) or None
        if self.session_id is None:
            self.sessions = await reader.sessions()
            return
        row = await reader.session(self.session_id)
        if row is None:
            self.session_id = None
            return
        self.digits = int(Config(row.overrides)["ids.digits"])
        facets = await reader.facets(self.session_id)
        self.paths = sorted(facets["path"], key=lambda f: -f[2])
        self.tools = sorted(facets["tool"], key=lambda f: -f[1])
        for rid, tool, rkind, path, args in await reader.recent_calls(self.session_id, RECENT):
            ref = self.ref(rid)
            words = describe_args(tool, args) or (path or "")
            self.recent.append((rid, f"{ref} {tool or ''} {words}".strip(), rkind or ""))

    def ref(self, rid: int) -> str:
        return format_id(rid, self.digits)

    # Commands

    def _jump(self, rid: int) -> None:
        assert self.session_id is not None
        self.app.post_message(Jump(self.session_id, rid))

    def _open(self, rid: int) -> None:
        assert self.session_id is not None
        self.app.post_message(OpenResult(self.session_id, rid))

    def _open_session(self, session_id: str) -> None:
        self.app.post_message(OpenSession(session_id))

    def _export(self) -> None:
        assert self.session_id is not None
        store = Path(getattr(self.app, "store_path", ""))
        self.app.notify(f"Exporting {self.session_id} to HTML…", title=EXPORT, markup=False)
        self.app.run_worker(partial(run_export, self.app, store, self.session_id), thread=True,
                            group="export", name="export")  # fmt: skip

    # Finding

    async def search(self, query: str) -> Hits:
        if self.session_id is None:
            for hit in self._session_hits(query):
                yield hit
            return
        matcher = self.matcher(query)
        if (score := matcher.match(EXPORT)) > 0:
            yield Hit(scaled(score, 0.3, 0.95), matcher.highlight(EXPORT), self._export,
                      text=EXPORT, help=EXPORT_HELP)  # fmt: skip
        rid = parse_id(query) if query.strip() else None
        if rid is not None and (found := await self.reader.result(self.session_id, rid)):
            ref = self.ref(rid)
            what = " ".join(x for x in (found.tool, found.path, found.rkind) if x)
            yield Hit(1.0, Content(f"Jump to {ref}  {what}"), partial(self._jump, rid),
                      text=f"Jump to {ref}", help="the result in the transcript")  # fmt: skip
            yield Hit(0.99, Content(f"Open {ref} in full"), partial(self._open, rid),
                      text=f"Open {ref}", help="the full stored result")  # fmt: skip
        for facets, kind in ((self.paths, "path"), (self.tools, "tool")):
            for name, count, newest in facets:
                score = matcher.match(name)
                if score > 0:
                    about = f"{kind}: {count} result{'s' * (count != 1)}, the newest"
                    yield Hit(
                        scaled(score, 0.3, 0.95), matcher.highlight(name),
                        partial(self._jump, newest), text=name,
                        help=f"{about} {self.ref(newest)}",
                    )  # fmt: skip
        for rid, text, rkind in self.recent:
            score = matcher.match(text)
            if score > 0:
                yield Hit(scaled(score, 0.0, 0.8), matcher.highlight(text),
                          partial(self._jump, rid), text=text, help=rkind)  # fmt: skip

    async def discover(self) -> Hits:
        if self.session_id is None:
            for hit in self._session_hits(""):
                yield hit
            return
        yield DiscoveryHit(Content(EXPORT), self._export, text=EXPORT, help=EXPORT_HELP)
        for tool, count, newest in self.tools[:DISCOVER]:
            yield DiscoveryHit(Content(f"tool {tool}"), partial(self._jump, newest),
                               text=f"tool {tool}", help=f"{count} results, the newest "
                               f"{self.ref(newest)}")  # fmt: skip
        for path, count, newest in self.paths[:DISCOVER]:
            yield DiscoveryHit(Content(path), partial(self._jump, newest), text=path,
                               help=f"{count} results, the newest {self.ref(newest)}")  # fmt: skip

    def _session_hits(self, query: str) -> Iterator[Hit | DiscoveryHit]:
        matcher = self.matcher(query)
        for s in self.sessions:
            text = f"{s.title} {s.id}"
            command = partial(self._open_session, s.id)
            help_text = f"session: {s.results} results, {'live' if s.live else 'ended'}"
            if not query:
                yield DiscoveryHit(Content(text), command, text=text, help=help_text)
            elif (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
