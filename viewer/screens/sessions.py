"""The list of the store's sessions; Enter opens one, new ones appear live."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ctxview.backend.store.records import SessionRow
from ctxview.viewer.messages import OpenSession, StoreChanged
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

# The short, telling columns first; the workspace (long, often the same) last.
COLUMNS = (
    ("title", "Title"),
    ("started", "Started"),
    ("results", "Results"),
    ("state", "State"),
    ("saved", "Chars saved"),
    ("source", "Source"),
    ("workspace", "Workspace"),
)
TITLE_WIDTH = 56  # a first prompt can be a paragraph; the rest of the row must stay in view

# At most one reload of the list per this many seconds while rows stream in, and never more
# often than every five times the last reload took (the list query sums every session's events:
# ~0.1 s for a store of 100,000 results), so a busy store costs at most a fifth of a core.
_MIN_RELOAD = 0.25
_RELOAD_SHARE = 5


def human_count(n: int) -> str:
    """12345 -> '12.3k': the savings column reads at a glance."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def short_path(path: str, width: int = 40) -> str:
    """The home folder as ~, and the tail of a long path, which is the part that tells."""
    home = str(Path.home())
    if home != "/" and (path == home or path.startswith(home + "/")):
        path = "~" + path[len(home) :]
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def format_started(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def ordered(sessions: list[SessionRow]) -> list[tuple[SessionRow, int]]:
    """Sessions newest first, each sub-agent session right under its parent, with its depth."""
    ids = {s.id for s in sessions}
    children: dict[str, list[SessionRow]] = {}
    roots: list[SessionRow] = []
    for s in sessions:
        if s.parent_session and s.parent_session in ids and s.parent_session != s.id:
            children.setdefault(s.parent_session, []).append(s)
        else:
            roots.append(s)
    out: list[tuple[SessionRow, int]] = []
    seen: set[str] = set()

    def walk(s: SessionRow, depth: int) -> None:
        if s.id in seen:  # a cycle in bad data must not hang the list
            return
        seen.add(s.id)
        out.append((s, depth))
        # Sub-agents in the order they started.
        for child in sorted(children.get(s.id, []), key=lambda c: (c.started, c.id)):
            walk(child, depth + 1)

    for s in roots:
        walk(s, 0)
    for s in sessions:  # anything left in a cycle still shows
        if s.id not in seen:
            walk(s, 0)
    return out


@dataclass(frozen=True)
class RowView:
    """What one row shows: compared between reloads so an idle list is not redrawn."""

    key: str
    cells: tuple[str, ...]
    live: bool
    depth: int


def row_view(s: SessionRow, depth: int) -> RowView:
    title = " ".join((s.title or s.id[:12]).split())
    if depth:
        title = "  " * (depth - 1) + "└ " + title
    if len(title) > TITLE_WIDTH:
        title = title[: TITLE_WIDTH - 1] + "…"
    cells = (
        title,
        format_started(s.started),
        str(s.results),
        "live" if s.live else "ended",
        human_count(s.chars_saved),
        s.source,
        short_path(s.workspace),
    )
    return RowView(s.id, cells, s.live, depth)


def _cells(row: RowView) -> list[Text]:
    # Text objects, never str: a title is untrusted and must not be parsed as markup.
    title, started, results, state, saved, source, workspace = row.cells
    return [
        Text(title, style="dim" if row.depth else ""),
        Text(started),
        Text(results, justify="right"),
        Text(state, style="bold green" if row.live else "dim"),
        Text(saved, justify="right"),
        Text(source),
        Text(workspace),
    ]


class SessionTable(DataTable[Text]):
    """The table, with Enter named in the footer (DataTable's own binding hides it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", show=True),
    ]


class SessionsScreen(Screen[None]):
    """A DataTable of sessions. Reads through `app.reader`; reloads on StoreChanged."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload", show=False),
        Binding("slash", "search", "Search all"),
    ]

    DEFAULT_CSS = """
    SessionsScreen #sessions-empty { padding: 1 2; color: $text-muted; display: none; }
    SessionsScreen.-empty #sessions-empty { display: block; }
    SessionsScreen.-empty DataTable { display: none; }
    SessionsScreen DataTable { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[RowView] | None = None  # None: not loaded yet
        self._dirty = False
        self._last_reload = 0.0
        self._reload_took = 0.0
        self._pending = False
        self._reloading = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("No sessions in this store yet.", id="sessions-empty", markup=False)
        table = SessionTable(cursor_type="row", zebra_stripes=True, id="sessions")
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.title = "ctxview"
        self.sub_title = "sessions"
        self.reload()

    def on_screen_resume(self) -> None:
        if self._dirty:
            self.reload()

    @on(StoreChanged)
    def _store_changed(self, event: StoreChanged) -> None:
        event.stop()
        if not self.is_current:  # reload when shown again
            self._dirty = True
            return
        self.reload()

    def action_reload(self) -> None:
        self.reload()

    def action_search(self) -> None:
        """Search every session (messages, calls, thinking, summaries, results)."""
        from .search import SearchScreen

        self.app.push_screen(SearchScreen())

    def reload(self) -> None:
        """Ask for a reload. Bursts collapse into one; a reload under way is never cancelled (a
        busy store would otherwise starve the list), it runs once more when asked meanwhile."""
        self._dirty = False
        self._pending = True
        if not self._reloading:
            self._reloading = True
            self._reload_loop()

    @work(group="sessions-reload")
    async def _reload_loop(self) -> None:
        try:
            while self._pending:
                self._pending = False
                spacing = max(_MIN_RELOAD, _RELOAD_SHARE * self._reload_took)
                wait = self._last_reload + spacing - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                self._last_reload = time.monotonic()
                reader = self.app.reader  # type: ignore[attr-defined]
                try:
                    sessions = await reader.sessions()
                except Exception as exc:  # a damaged store, or the app closing under us
                    if self.is_attached and self.app.is_running:
                        self.notify(f"Cannot read the sessions: {exc}", severity="error",
                                    markup=False)  # fmt: skip
                    return
                self._reload_took = time.monotonic() - self._last_reload
                self.show([row_view(s, depth) for s, depth in ordered(sessions)])
        finally:
            self._reloading = False

    def show(self, rows: list[RowView]) -> None:
        if rows == self._rows:
            return
        table = self.query_one(DataTable)
        keep = self._cursor_key(table)
        old_rows = self._rows or []
        old_keys = [r.key for r in old_rows]
        new_keys = [r.key for r in rows]
        if old_keys == new_keys:
            # Same sessions in the same order: update the cells that changed, no flicker.
            for old, new in zip(old_rows, rows, strict=True):
                if old != new:
                    for (col, _), cell, prev, was in zip(
                        COLUMNS, _cells(new), new.cells, old.cells, strict=True
                    ):
                        if prev != was:
                            table.update_cell(new.key, col, cell)
        else:
            table.clear()
            for row in rows:
                table.add_row(*_cells(row), key=row.key)
            if keep in new_keys:
                table.move_cursor(row=new_keys.index(keep), animate=False)
        self._rows = rows
        self.set_class(not rows, "-empty")
        live = sum(r.live for r in rows)
        self.sub_title = f"{len(rows)} session{'s' * (len(rows) != 1)} · {live} live"

    @staticmethod
    def _cursor_key(table: DataTable[Text]) -> str | None:
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:  # the cursor can be past the rows while they change
            return None
        return key.value

    @property
    def session_ids(self) -> list[str]:
        """The ids in the order shown (for tests and the palette)."""
        return [r.key for r in self._rows or []]

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value:
            self.post_message(OpenSession(event.row_key.value))
