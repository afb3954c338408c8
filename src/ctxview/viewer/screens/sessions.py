"""The list of the store's sessions; Enter opens one, new ones appear live."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Header, Input, Static

from ctxview.report.agents import agent_source
from ctxview.store.records import SessionRow
from ctxview.viewer.messages import OpenSession, StoreChanged
from ctxview.viewer.screens.teardown import CtxviewScreen
from ctxview.viewer.widgets.footer import KeysFooter

# The short, telling columns first; the workspace (long, often the same) last. Each column's
# (key, label, natural width, narrowest width); a narrow screen shrinks the title and the
# workspace down to their narrowest, then drops columns from the end of DROP_ORDER.
COLUMNS = (
    ("title", "Title", 56, 24),
    ("started", "Started", 16, 16),
    ("results", "Results", 7, 7),
    ("state", "State", 5, 5),
    ("saved", "Saved", 7, 7),
    ("source", "Source", 11, 11),
    ("workspace", "Workspace", 40, 12),
)
KEEP_ORDER = ("title", "state", "results", "started", "saved", "source", "workspace")
TITLE_WIDTH = 56  # a first prompt can be a paragraph; the rest of the row must stay in view
CELL_PADDING = 2  # DataTable pads each cell by one on either side
SCROLLBAR = 2  # the vertical scrollbar's room, kept whether it shows or not
SORTS = ("newest", "size", "savings")
EMPTY = (
    "No sessions in this store yet. `ctxview demo` writes a sample session to watch; "
    "`ctxview import ~/.claude/projects` imports your Claude Code sessions "
    "(`ctxview import ~/.codex/sessions` Codex's); `ctxview follow` follows a running agent."
)


def fit_columns(width: int) -> list[tuple[str, str, int]]:
    """The columns that fit `width` cells, in display order, as (key, label, width): each kept
    column as wide as it wants while the room lasts, the title and workspace shrunk first, then
    columns dropped from the end of KEEP_ORDER. Never wider than `width` (no sideways scroll)."""
    spec = {key: (label, natural, narrow) for key, label, natural, narrow in COLUMNS}
    room = width - SCROLLBAR
    kept: list[str] = []
    for key in KEEP_ORDER:
        narrow = spec[key][2] + CELL_PADDING
        if sum(spec[k][2] + CELL_PADDING for k in kept) + narrow <= room:
            kept.append(key)
    widths = {k: spec[k][2] for k in kept}
    spare = room - sum(w + CELL_PADDING for w in widths.values())
    for key in ("title", "workspace", *kept):  # the flexible ones take the room first
        if key in widths and spare > 0:
            grow = min(spare, spec[key][1] - widths[key])
            widths[key] += grow
            spare -= grow
    return [(key, spec[key][0], widths[key]) for key, *_ in COLUMNS if key in widths]


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


def _sort_key(sort: str, totals: dict[str, tuple[int, int]]) -> Callable[[SessionRow], Any]:
    """A session tree's place: by the figures of the tree (a parent with its sub-agents: a
    parent whose sub-agents did the reading saved 0 itself and sank to the end by savings)."""
    if sort == "size":
        return lambda s: (-totals[s.id][1], -s.started, s.id)
    if sort == "savings":
        return lambda s: (-totals[s.id][0], -s.started, s.id)
    return lambda s: (-s.started, s.id)


def _children(sessions: list[SessionRow]) -> dict[str, list[SessionRow]]:
    ids = {s.id for s in sessions}
    children: dict[str, list[SessionRow]] = {}
    for s in sessions:
        if s.parent_session and s.parent_session in ids and s.parent_session != s.id:
            children.setdefault(s.parent_session, []).append(s)
    return children


def tree_totals(sessions: list[SessionRow]) -> dict[str, tuple[int, int]]:
    """Per session, (characters saved, characters stored) of it and every sub-agent below it."""
    children = _children(sessions)
    out: dict[str, tuple[int, int]] = {}

    def total(s: SessionRow, path: frozenset[str]) -> tuple[int, int]:
        if s.id in out:
            return out[s.id]
        saved, stored = s.chars_saved, s.chars_stored
        for child in children.get(s.id, []):
            if child.id not in path:  # a cycle in bad data must not recurse forever
                cs, cst = total(child, path | {child.id})
                saved, stored = saved + cs, stored + cst
        out[s.id] = (saved, stored)
        return out[s.id]

    for s in sessions:
        total(s, frozenset({s.id}))
    return out


def ordered(sessions: list[SessionRow], sort: str = "newest",
            totals: dict[str, tuple[int, int]] | None = None) -> list[tuple[SessionRow, int]]:  # fmt: skip
    """Sessions by `sort` (newest, size: stored characters, savings: characters saved, each of
    a session with its sub-agents), each sub-agent session right under its parent, with its
    depth."""
    totals = totals if totals is not None else tree_totals(sessions)
    sessions = sorted(sessions, key=_sort_key(sort, totals))
    children = _children(sessions)
    ids = {s.id for s in sessions}
    roots = [s for s in sessions
             if not (s.parent_session and s.parent_session in ids and s.parent_session != s.id)]  # fmt: skip
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


def matches(s: SessionRow, words: list[str]) -> bool:
    """Every word of the filter is in the title, the workspace or the source; a word
    `agent:NAME` keeps the sessions of that agent only (`agent:pi`, `agent:gemini`)."""
    hay = f"{s.title}\n{s.workspace}\n{short_path(s.workspace, 1000)}\n{s.source}".lower()
    for w in words:
        if w.startswith("agent:") and len(w) > 6:
            if s.source != (agent_source(w[6:]) or w[6:]):
                return False
        elif w not in hay:
            return False
    return True


GROUP = "\x00group:"  # the key prefix of a group's heading row


@dataclass(frozen=True)
class RowView:
    """What one row shows: compared between reloads so an idle list is not redrawn."""

    key: str
    cells: tuple[str, ...]
    live: bool
    depth: int


def row_view(s: SessionRow, depth: int, saved: int | None = None) -> RowView:
    """`saved`: what the session saved with its sub-agents (default: its own)."""
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
        human_count(s.chars_saved if saved is None else saved),
        # A session pulled from a team store (ctxview pull) names the machine it came from.
        f"{s.source}@{m}" if (m := s.extra.get("machine")) else s.source,
        short_path(s.workspace, 200),
    )
    return RowView(s.id, cells, s.live, depth)


def group_view(workspace: str, count: int) -> RowView:
    """A group's heading: how many sessions, then the workspace (its tail kept when cut)."""
    label = f"▾ {count} session{'s' * (count != 1)} · "
    path = short_path(workspace, 200) or "(no workspace)"
    return RowView(GROUP + workspace, (label, "", "", "", "", "", path), False, -1)


def _fit(text: str, width: int, *, tail: bool = False) -> str:
    """Cut to `width` cells with an ellipsis (a path keeps its tail, which is the part that
    tells). Counted in cells, not characters: a CJK title cut by characters ran past its column,
    which cropped it and its ellipsis."""
    if cell_len(text) <= width:
        return text
    if tail:
        end = _head(text[::-1], width - 1)[::-1]
        while end and not get_character_cell_size(end[0]):  # no mark without its character
            end = end[1:]
        return "…" + end
    return _head(text, width - 1) + "…"


def _head(text: str, width: int) -> str:
    """The longest start of `text` within `width` cells (a wide character that would straddle
    the edge is left out; combining marks stay with their character)."""
    used = 0
    for i, ch in enumerate(text):
        used += get_character_cell_size(ch)
        if used > width:
            return text[:i]
    return text


def _cells(row: RowView, columns: list[tuple[str, str, int]]) -> list[Text]:
    # Text objects, never str: a title is untrusted and must not be parsed as markup.
    by_key = dict(zip((c[0] for c in COLUMNS), row.cells, strict=True))
    out: list[Text] = []
    for key, _, width in columns:
        value = _fit(by_key[key], width, tail=key == "workspace")
        if row.depth < 0:  # a group's heading: all of it in the title column
            if key == "title":
                label = by_key["title"]
                value = label + _fit(
                    by_key["workspace"], max(width - cell_len(label), 2), tail=True
                )
            out.append(Text(value if key == "title" else "", style="bold"))
        elif key == "title":
            out.append(Text(value, style="dim" if row.depth else ""))
        elif key in ("results", "saved"):
            out.append(Text(value, justify="right"))
        elif key == "state":
            out.append(Text(value, style="bold green" if row.live else "dim"))
        else:
            out.append(Text(value))
    return out


class SessionTable(DataTable[Text]):
    """The table, with Enter named in the footer (DataTable's own binding hides it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", show=True),
    ]


class FilterInput(Input):
    """The filter line: typing filters the list; enter, escape or down go back to it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "done(True)", "Clear filter"),
        Binding("enter", "done(False)", "To the list", show=False),
        Binding("down", "done(False)", "To the list", show=False),
    ]

    def action_done(self, clear: bool) -> None:
        if clear:
            self.value = ""
        self.screen.query_one(SessionTable).focus()


class SessionsScreen(CtxviewScreen[None]):
    """A DataTable of sessions. Reads through `app.reader`; reloads on StoreChanged."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload", show=False),
        Binding("f", "filter", "Filter"),
        Binding("s", "sort", "Sort"),
        Binding("w", "group", "Group"),
        Binding("slash", "search", "Search all"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    DEFAULT_CSS = """
    SessionsScreen #sessions-empty { padding: 1 2; color: $text-muted; display: none; }
    SessionsScreen.-empty #sessions-empty { display: block; }
    SessionsScreen.-empty DataTable { display: none; }
    SessionsScreen DataTable { height: 1fr; overflow-x: hidden; }
    SessionsScreen FilterInput { display: none; }
    SessionsScreen.-filtering FilterInput { display: block; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[RowView] | None = None  # None: not loaded yet
        self._sessions: list[SessionRow] | None = None
        self._columns: list[tuple[str, str, int]] = []
        self._dirty = False
        self._last_reload = 0.0
        self._reload_took = 0.0
        self._pending = False
        self._reloading = False
        self.sort = "newest"
        self.grouped = False
        self.filter_words: list[str] = []

    def compose(self) -> ComposeResult:
        # The header's default icon (U+2B58) is in no font a browser has here: a box.
        yield Header(icon="≡")
        yield FilterInput(placeholder="filter: words of the title, workspace or source; agent:pi",
                          id="sessions-filter", compact=True)  # fmt: skip
        yield Static(EMPTY, id="sessions-empty", markup=False)
        yield SessionTable(cursor_type="row", zebra_stripes=True, id="sessions")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.title = "ctxview"
        self.sub_title = "sessions"
        self.query_one(SessionTable).focus()
        self.reload()
        # A writer that dies leaves its lease to run out with no write to tell us: look again.
        self.set_interval(2.0, self._lease_check)

    def on_screen_resume(self) -> None:
        if self._dirty:
            self.reload()
        else:  # a lease may have run out while hidden (the check skips a hidden list)
            self._layout_rows()

    @property
    def shown(self) -> bool:
        """Can the list be seen: every screen above it lets it show through. Not Textual's
        `is_current`, which also counts the screen right under an opaque one (a transcript over
        the list), so the hidden list reloaded and repainted on every commit."""
        stack = self.app.screen_stack
        if self not in stack:
            return False
        above = stack[stack.index(self) + 1 :]
        return all(screen.styles.background.a < 1 for screen in above)

    def on_resize(self) -> None:
        self._layout_rows(force=False)

    @on(StoreChanged)
    def _store_changed(self, event: StoreChanged) -> None:
        event.stop()
        if not self.shown:  # reload once when shown again
            self._dirty = True
            return
        self.reload()

    def action_reload(self) -> None:
        self.reload()

    def action_search(self) -> None:
        """Search every session (messages, calls, thinking, summaries, results)."""
        from ctxview.viewer.screens.search import SearchScreen

        self.app.push_screen(SearchScreen())

    def action_filter(self) -> None:
        self.add_class("-filtering")
        self.query_one(FilterInput).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one(FilterInput)
        if box.value:
            box.value = ""
        self.remove_class("-filtering")

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._layout_rows()

    def action_group(self) -> None:
        self.grouped = not self.grouped
        self._layout_rows()

    @on(Input.Changed, "#sessions-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_words = event.value.lower().split()
        if not event.value and self.focused is not event.input:
            self.remove_class("-filtering")
        self._layout_rows()

    @on(Input.Submitted, "#sessions-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(SessionTable).focus()

    def _lease_check(self) -> None:
        if self._rows and any(r.live for r in self._rows) and self.shown:
            self._layout_rows()

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
                reader = self.app.reader
                try:
                    sessions = await reader.sessions()
                except Exception as exc:  # a damaged store, or the app closing under us
                    if self.is_attached and self.app.is_running:
                        self.notify(f"Cannot read the sessions: {exc}", severity="error",
                                    markup=False)  # fmt: skip
                    return
                self._reload_took = time.monotonic() - self._last_reload
                self._sessions = sessions
                self._layout_rows()
        finally:
            self._reloading = False

    def rows_for(self, sessions: list[SessionRow]) -> list[RowView]:
        """The rows shown: filtered, sorted, grouped by workspace when asked."""
        totals = tree_totals(sessions)
        picked = [(s, d) for s, d in ordered(sessions, self.sort, totals)
                  if not self.filter_words or matches(s, self.filter_words)]  # fmt: skip

        def row(s: SessionRow, d: int) -> RowView:
            return row_view(s, d, totals[s.id][0])  # a parent's saving includes its sub-agents'

        if not self.grouped:
            return [row(s, d) for s, d in picked]
        groups: dict[str, list[tuple[SessionRow, int]]] = {}
        current = ""
        for s, d in picked:  # a sub-agent stays with its parent's group (it follows it)
            current = s.workspace if d == 0 or not groups else current
            groups.setdefault(current, []).append((s, d))
        out: list[RowView] = []
        for ws, members in groups.items():
            out.append(group_view(ws, sum(d == 0 for _, d in members)))
            out.extend(row(s, d) for s, d in members)
        return out

    def _layout_rows(self, *, force: bool = True) -> None:
        if self._sessions is None or not self.is_attached:
            return
        tables = self.query(SessionTable)
        if not tables:  # a screen being removed loses its children first (the store replaced)
            return
        table = tables.first()
        columns = fit_columns(table.size.width or self.size.width or 80)
        if columns != self._columns:
            self._columns = columns
            keep = self._cursor_key(table)
            table.clear(columns=True)
            for key, label, width in columns:
                table.add_column(label, key=key, width=width)
            self._rows = None
            self.show(self.rows_for(self._sessions), keep=keep)
        elif force:
            self.show(self.rows_for(self._sessions))

    def show(self, rows: list[RowView], *, keep: str | None = None) -> None:
        if rows == self._rows:
            self._tell()
            return
        table = self.query_one(SessionTable)
        keep = keep or self._cursor_key(table)
        old_rows = self._rows or []
        old_keys = [r.key for r in old_rows]
        new_keys = [r.key for r in rows]
        if old_keys == new_keys and self._rows is not None:
            # Same sessions in the same order: update the cells that changed, no flicker.
            keys = [c[0] for c in COLUMNS]
            shown = {c[0] for c in self._columns}
            for old, new in zip(old_rows, rows, strict=True):
                if old == new:
                    continue
                cells = dict(zip([c[0] for c in self._columns], _cells(new, self._columns),
                                 strict=True))  # fmt: skip
                for col, prev, was in zip(keys, new.cells, old.cells, strict=True):
                    if col in shown and (prev != was or old.live != new.live):
                        table.update_cell(new.key, col, cells[col])
        else:
            table.clear()
            for row in rows:
                table.add_row(*_cells(row, self._columns), key=row.key)
            if keep in new_keys:
                table.move_cursor(row=new_keys.index(keep), animate=False)
            elif rows and rows[0].depth < 0 and len(rows) > 1:
                table.move_cursor(row=1, animate=False)  # past the first group's heading
        self._rows = rows
        self._tell()

    def _tell(self) -> None:
        """The empty state and the sub-title: how many, how many live, the order, the filter."""
        rows = self._rows or []
        everything = self._sessions or []
        self.set_class(not rows, "-empty")
        empty = self.query_one("#sessions-empty", Static)
        if not everything:
            empty.update(EMPTY)
        elif not rows:
            empty.update(f"No session matches {' '.join(self.filter_words)!r}; escape clears "
                         "the filter.")  # fmt: skip
        sessions = [r for r in rows if r.depth >= 0]
        live = sum(r.live for r in sessions)
        parts = [f"{len(sessions)} session{'s' * (len(sessions) != 1)}", f"{live} live",
                 self.sort]  # fmt: skip
        if self.grouped:
            parts.append("by workspace")
        if self.filter_words:
            parts.append(f"filter {' '.join(self.filter_words)!r}")
        self.sub_title = " · ".join(parts)

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
        """The ids in the order shown (for tests and the palette); headings left out."""
        return [r.key for r in self._rows or [] if r.depth >= 0]

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key and not key.startswith(GROUP):
            self.post_message(OpenSession(key))
