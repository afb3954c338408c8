"""The transcript of one session: the Line-API view, jumps with a history, search, boundaries."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widget import MountError
from textual.widgets import Static

from ctxview.rules.ids import format_id, parse_id
from ctxview.store import StoreError
from ctxview.store.records import SessionRow
from ctxview.store.search import Hit
from ctxview.viewer.live_state import header_parts
from ctxview.viewer.messages import Jump, OpenSession, StoreChanged
from ctxview.viewer.reader_app import ReaderApp
from ctxview.viewer.screens.teardown import CtxviewScreen
from ctxview.viewer.widgets.footer import KeysFooter as Footer
from ctxview.viewer.widgets.prompt import PromptBar
from ctxview.viewer.widgets.title_line import TitleLine
from ctxview.viewer.widgets.transcript_view import TranscriptView

if TYPE_CHECKING:
    from ctxview.viewer.widgets.context_panel import ContextFigures


class TranscriptScreen(CtxviewScreen[None]):
    """One session, following its tail."""

    app = getters.app(ReaderApp)  # typed: the app's reader
    SEARCH_LIMIT = 1000  # hits a search takes; past it the count says "1,000+"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "jump_prompt", "Jump"),
        Binding("number_sign", "jump_prompt", "Jump", show=False),
        Binding("slash", "search_prompt", "Search"),
        Binding("n", "next_hit(1)", "Next hit"),
        Binding("N", "next_hit(-1)", "Previous hit", show=False),
        Binding("m", "toggle_mode", "Model/stored"),
        Binding("left_square_bracket", "boundary(-1)", "Previous boundary", show=False),
        Binding("right_square_bracket", "boundary(1)", "Next boundary"),
        Binding("alt+left", "history(-1)", "Back"),
        Binding("alt+right", "history(1)", "Forward", show=False),
        Binding("escape", "back", "Back", show=False),
        Binding(
            "c",
            "context_panel",
            "context per request: none / 3.0.0 / elided, breaks, cache",
            show=False,
        ),
        Binding(
            "x", "context_sent", "the context exactly as sent at the cursor's request", show=False
        ),
    ]

    # The footer's keys, most wanted first: at 80 columns the first four show beside the
    # palette, quit and keys (widgets/footer.py).
    FOOTER_ORDER: ClassVar[tuple[str, ...]] = (
        "jump_prompt", "search_prompt", "next_hit(1)", "boundary(1)", "toggle_mode",
        "history(-1)", "primary", "tail",
    )  # fmt: skip

    def __init__(self, session_id: str | None, jump: str | int | None = None,
                 search: tuple[str, int] | None = None) -> None:  # fmt: skip
        """`search`: (query, seq) from a search across sessions: search this session for the
        query and land on the hit at event `seq`."""
        super().__init__()
        self.pending_search = search
        self.session_id = session_id or ""
        self.pending_jump: int | None = (
            jump if isinstance(jump, int) else parse_id(jump) if jump else None
        )
        # The jump history as event seqs (a far jump replaces the loaded blocks).
        self.jump_back: list[int] = []
        self.jump_forward: list[int] = []
        self.hits: list[Hit] = []
        self.hits_more = False  # more hits than the query's limit
        self.hit = -1
        self.search_query = ""
        self.title_text = ""
        self.digits = 4
        self._status_timer_set = False
        self._title_due = False
        self._status_text = ""
        self._binding_state: tuple[bool, ...] = ()
        # The context panel's figures, replayed once and kept while the screen lives.
        self._context_figures: ContextFigures | None = None

    def compose(self) -> ComposeResult:
        yield TitleLine(id="transcript-title", classes="title-line")
        yield Static(id="new-rows")
        yield Static(id="status", classes="status-line")
        yield PromptBar()
        yield Footer()

    async def on_mount(self) -> None:
        reader = self.app.reader
        try:
            row = await reader.resolve_session(self.session_id or None)
        except StoreError as exc:  # no such session, or none yet: say so, do not crash
            self.query_one("#transcript-title", TitleLine).show(str(exc))
            return
        self.session_id = row.id
        self.digits = int(row.overrides.get("ids.digits", 4))
        self._show_title(row)
        # A writer that dies leaves its lease to run out with no write to tell us: look again.
        self.set_interval(2.0, self._title_check)
        self.view = TranscriptView(self.session_id, digits=self.digits, id="transcript")
        await self.mount(self.view, after=self.query_one("#transcript-title"))
        self.view.focus()
        self.load_view()

    @work(group="outline")
    async def load_view(self) -> None:
        around = rid = None
        if self.pending_search is not None:
            query, around = self.pending_search
            self.pending_search = None
            await self.view.load(around=around)
            await self.search(query, at_seq=around)
            return
        if self.pending_jump is not None:  # `--jump ID`: the rows around it first
            ev = await self.app.reader.result(self.session_id, self.pending_jump)
            if ev is not None and ev.seq is not None:
                around, rid, self.pending_jump = ev.seq, self.pending_jump, None
        await self.view.load(around=around, rid=rid)
        if self.pending_jump is not None:
            self._try_jump()
        self.update_status()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer shows the keys that apply: boundaries, hits and history when there are.
        One that does not apply now is disabled (None), which the footer hides in place; False
        would take it out of the bindings, and the footer would compose itself anew when it
        came back (200-300 ms of a jump)."""
        view = getattr(self, "view", None)
        if view is None:
            return action == "back"  # no transcript (no such session): only leaving works
        if action == "boundary" and parameters == (1,):
            return bool(view and view.outline.boundaries) or None
        if action == "next_hit" and parameters == (1,):
            return bool(self.hits) or None
        if action == "history" and parameters == (-1,):
            return bool(self.jump_back) or None
        return True

    def bindings_changed(self) -> None:
        """Redraw the footer only when what applies changed: a redraw restyles every key."""
        view = getattr(self, "view", None)
        state = (bool(view and view.outline.boundaries), bool(self.hits), bool(self.jump_back))
        if state != self._binding_state:
            self._binding_state = state
            self.refresh_bindings()

    # Store changes

    @on(StoreChanged)
    def _store_changed(self, event: StoreChanged) -> None:
        view = getattr(self, "view", None)
        if view is not None:
            # A worker, not an await here: the screen's queue (its frames too) stays free.
            self.run_worker(view.fetch_new, group="fetch")  # a coroutine only once it runs
            if not self._title_due:
                # The title at most 4 times a second, not per commit: its query would queue
                # on the read connection beside the rows' own.
                self._title_due = True
                self.set_timer(0.25, self._title_reload)

    def _title_reload(self) -> None:
        self._title_due = False
        self.run_worker(self._reload_title, group="title", exclusive=True)

    # The title line: a retitle, and the live state (a writer's lease), as they change

    def _show_title(self, row: SessionRow) -> None:
        self._title_row = row
        title, tail = header_parts(row)
        if title + tail != self.title_text:
            self.title_text = title + tail
            self.query_one("#transcript-title", TitleLine).show(title, tail)

    async def _reload_title(self) -> None:
        row = getattr(self, "_title_row", None)
        head = await self.app.reader.session_head(self.session_id)
        if row is not None and head is not None and self.is_attached:
            self._show_title(replace(row, title=head[0], ended=head[1], lease_until=head[2]))

    def _title_check(self) -> None:
        row = getattr(self, "_title_row", None)
        if row is not None:
            self._show_title(row)  # a lease that ran out reads "not live: no writer"

    @on(TranscriptView.Follow)
    def _follow(self, event: TranscriptView.Follow) -> None:
        note = self.query_one("#new-rows", Static)
        if event.new_rows and not event.following:
            note.update(Text(f"{event.new_rows} new rows ↓  (end)"))
            note.add_class("-shown")
        elif note.has_class("-shown"):
            note.remove_class("-shown")
        self.update_status_soon()

    @on(events.Click, "#new-rows")
    def _new_rows_clicked(self) -> None:
        self.view.action_tail()

    @on(TranscriptView.ModeChanged)
    def _mode_changed(self) -> None:
        self.update_status()

    @on(TranscriptView.Landed)
    def _landed(self) -> None:
        self.update_status()

    @on(TranscriptView.Loaded)
    def _loaded(self) -> None:
        if self.pending_jump is not None:
            self._try_jump()
        self.update_status()

    def update_status_soon(self) -> None:
        """Rows arrive many times a second: redraw the status at most 4 times a second."""
        if not self._status_timer_set:
            self._status_timer_set = True
            self.set_timer(0.25, self.update_status)

    def update_status(self, message: str = "") -> None:
        self._status_timer_set = False
        view = getattr(self, "view", None)
        if view is None:
            return
        self.bindings_changed()
        n = len(view.outline.by_rid)
        parts = [f"{n:,} result{'s' * (n != 1)}"]
        if not view.fully_loaded:
            parts.append("loading earlier rows…")
        parts.append("stored text" if view.stored_mode else "the model's view")
        if view.raw:
            parts.append("messages raw")
        if view.outline.boundaries:
            n = len(view.outline.boundaries)
            parts.append(f"{n} compaction{'s' if n != 1 else ''}")
        if self.hits:
            more = "+" if self.hits_more else ""
            parts.append(f"hit {self.hit + 1}/{len(self.hits):,}{more} for {self.search_query!r}")
        elif self.search_query:
            parts.append(f"no hits for {self.search_query!r}")
        if view.following:
            parts.append("following")
        if message:
            parts.append(message)
        text = " · ".join(parts)
        if text != self._status_text:
            self._status_text = text
            self.query_one("#status", Static).update(Text(text), layout=False)

    # Jumps

    def jump_to(self, rid: int) -> bool:
        """Land on result `rid`, remembering where we were (alt+left goes back). True when it
        was loaded and the cursor is on it; a result not loaded yet is looked up and its rows
        loaded first (`far_jump`)."""
        block = self.view.outline.block_of(rid)
        if block is None:
            # Not loaded yet, or another session's of this one's tree (a sub-agent's id, or
            # its parent's: they share one id space): looked up in the store.
            self.run_worker(self.far_jump(rid), group="jump")
            return False
        self._remember(block.seq)
        self.view.move_to(block, top=True)
        self.bindings_changed()
        return True

    async def far_jump(self, rid: int) -> None:
        """A result among the rows not loaded yet: load the rows around it and land there."""
        self.view.hold_loading(True)  # the loader's next step would hold up the lookup
        try:
            ev = await self.app.reader.result(self.session_id, rid)
        finally:
            self.view.hold_loading(False)
        if ev is None or ev.seq is None:
            holder = await self.app.reader.tree_holder(self.session_id, rid)
            if holder is not None and holder != self.session_id:
                self.app.post_message(Jump(holder, rid))  # its transcript, at that id
                return
            self.say(f"There is no result {format_id(rid, self.digits)} in this session.")
            return
        block = self.view.outline.block_of(rid)  # loaded meanwhile
        if block is not None:
            self.jump_to(rid)
            return
        self._remember(ev.seq)
        self.view.far(ev.seq, rid)

    def jump_to_seq(self, seq: int) -> None:
        """Land on the row of event `seq` (a stride's row), loading it first if it is not."""
        block = self.view.outline.block_at_seq(seq)
        self._remember(seq if block is None else block.seq)
        if block is not None:
            self.view.move_to(block, top=True)
        else:
            self.view.far(seq)
        self.bindings_changed()

    def _remember(self, target: int) -> None:
        current = self.view.cursor_block
        if current is not None and current.seq != target and target not in current.seqs:
            self.jump_back.append(current.seq)
            self.jump_forward.clear()

    def _try_jump(self) -> None:
        rid, self.pending_jump = self.pending_jump, None
        if rid is not None:
            self.jump_to(rid)

    def say(self, message: str) -> None:
        """Tell once, in the status line (a toast as well showed every error twice)."""
        self.update_status(message)

    def action_history(self, step: int) -> None:
        src, dst = (
            (self.jump_back, self.jump_forward) if step < 0 else (self.jump_forward, self.jump_back)
        )
        if not src:
            self.say("No earlier jump." if step < 0 else "No later jump.")
            return
        seq = src.pop()
        if self.view.cursor_block is not None:
            dst.append(self.view.cursor_block.seq)
        block = self.view.outline.block_at_seq(seq)
        if block is not None:
            self.view.move_to(block, top=True)
        else:
            self.view.far(seq)
        self.bindings_changed()

    @on(TranscriptView.StubFollowed)
    def _stub(self, event: TranscriptView.StubFollowed) -> None:
        self.jump_to(event.rid)

    @on(TranscriptView.AgentFollowed)
    def _agent(self, event: TranscriptView.AgentFollowed) -> None:
        self.post_message(OpenSession(event.session_id))

    @on(TranscriptView.SeqFollowed)
    def _seq(self, event: TranscriptView.SeqFollowed) -> None:
        self.jump_to_seq(event.seq)

    def action_jump_prompt(self) -> None:
        self.query_one(PromptBar).ask("jump", "Jump to id", "#1a2b or 1a2b")

    def action_search_prompt(self) -> None:
        self.query_one(PromptBar).ask(
            "search", "Search", "words: messages, calls, thinking, results"
        )

    @on(PromptBar.Submitted)
    async def _prompt(self, event: PromptBar.Submitted) -> None:
        if getattr(self, "view", None) is None:
            return
        self.view.focus()
        if event.kind == "jump":
            rid = parse_id(event.value)
            if rid is None:
                self.say(f"{event.value!r} is not a result id (hex digits, with or without #).")
                return
            self.jump_to(rid)
        elif event.kind == "search":
            await self.search(event.value)

    async def search(self, query: str, *, at_seq: int | None = None) -> None:
        """Messages, calls, thinking, summaries and results matching `query`; the first hit at or
        after the cursor (or at event `at_seq`) is shown, on its line."""
        reader = self.app.reader
        self.search_query = query.strip()
        self.hits, self.hits_more = (
            await reader.search_hits(
                self.search_query, session=self.session_id, limit=self.SEARCH_LIMIT
            )
            if self.search_query
            else ([], False)
        )
        self.hit = -1
        self.view.mark_words(search_words(self.search_query))
        if not self.hits:
            self.view.hit_line = None
            self.say(f"Nothing in this session matches {self.search_query!r}.")
            return
        cursor = self.view.cursor_block
        here = at_seq if at_seq is not None else cursor.seq if cursor is not None else 0
        start = next((i for i, h in enumerate(self.hits) if h.seq >= here), 0)
        self.hit = start - 1
        self.action_next_hit(1)

    def action_next_hit(self, step: int) -> None:
        if not self.hits:
            self.say("No search yet: / searches." if not self.search_query else "No hits.")
            return
        self.hit = (self.hit + step) % len(self.hits)
        hit = self.hits[self.hit]
        block = self.view.outline.block_at_seq(hit.seq)
        self._remember(hit.seq if block is None else block.seq)
        self.run_worker(self.view.show_hit(hit.seq, self.view.words), group="hit", exclusive=True)
        self.update_status()

    # Boundaries, mode

    def action_boundary(self, step: int) -> None:
        bounds = self.view.outline.boundaries
        if not bounds:
            self.say("This session has no compaction boundary.")
            return
        cur = self.view.cursor
        if step > 0:
            target = next((b for b in bounds if b.index > cur), None)
        else:
            target = next((b for b in reversed(bounds) if b.index < cur), None)
        if target is None:
            self.say("No later boundary." if step > 0 else "No earlier boundary.")
            return
        self.view.move_to(target, top=True)

    def action_toggle_mode(self) -> None:
        self.view.set_stored_mode(not self.view.stored_mode)
        self.update_status()

    # The context as sent (issue 5): the panel, and one request's whole context

    async def action_context_panel(self) -> None:
        """`c`: show the context panel, or hide it."""
        # Loaded on first use: the panel's replay is not needed to open a transcript.
        from ctxview.viewer.widgets.context_panel import (
            ContextFigures,
            ContextPanel,
            keep_cursor_in_view,
        )

        found = self.query(ContextPanel)
        if found:
            await found.first().remove()
            return
        reader = self.app.reader
        figures = self._context_figures
        if figures is None:
            # The session's config as the screen read it on opening (the list query that sums a
            # session's events takes a good part of a second at 100,000 results).
            row = getattr(self, "_title_row", None) or await reader.session(self.session_id)
            overrides = row.overrides if row is not None else {}
            figures = self._context_figures = ContextFigures.for_session(overrides)
        # seq grows by one per event: the newest one's is how many there are (the progress shown).
        total = await reader.last_seq(self.session_id)
        panel = ContextPanel(self.session_id, {}, digits=self.digits, figures=figures,
                             total=total)  # fmt: skip
        if not self.is_attached:
            return  # the screen went away (the app is quitting) while the session row loaded
        views = self.query(TranscriptView)
        view = views.first() if views else None
        try:
            await self.mount(panel, after=view)
        except MountError:
            return  # likewise, between the check and the mount
        if view is not None:
            # The panel takes rows from the view: keep the cursor's block in sight (at the live
            # tail it would sit under the panel otherwise).
            self.call_after_refresh(keep_cursor_in_view, view)

    def action_context_sent(self) -> None:
        """`x`: the context exactly as sent at the request under the cursor."""
        from ctxview.viewer.screens.context import ContextScreen  # loaded on first use

        views = self.query(TranscriptView)
        block = views.first().cursor_block if views else None
        seq = (block.rseq or block.seq) if block is not None else None
        self.app.push_screen(ContextScreen(self.session_id, at_seq=seq))

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()


def search_words(query: str) -> tuple[str, ...]:
    """The words a search marks on screen (one-letter words would mark everything)."""
    return tuple(w for w in re.findall(r"\w+", query) if len(w) > 1)
