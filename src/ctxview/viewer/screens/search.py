"""Search across every session (`/` in the session list): messages, calls, thinking, summaries
and results; Enter opens the session on the hit's line."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ctxview.rules.ids import format_id
from ctxview.store.search import Hit
from ctxview.viewer.screens.teardown import CtxviewScreen
from ctxview.viewer.widgets.footer import KeysFooter as Footer

LIMIT = 500


class SearchScreen(CtxviewScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
    ]

    DEFAULT_CSS = """
    SearchScreen #search-input { margin: 0 1; }
    SearchScreen #search-hits { height: 1fr; }
    SearchScreen #search-status { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.query_text = query
        self.hits: list[Hit] = []
        self.more = False
        self.titles: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static(Text("Search every session: messages, calls, thinking, summaries, results"),
                     classes="title-line")  # fmt: skip
        yield Input(self.query_text, placeholder="words", id="search-input")
        yield OptionList(id="search-hits")
        yield Static(id="search-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        if self.query_text:
            self.run_search(self.query_text)

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        self.run_search(event.value)

    @work(exclusive=True, group="search")
    async def run_search(self, query: str) -> None:
        reader = self.app.reader
        self.query_text = query.strip()
        status = self.query_one("#search-status", Static)
        hits_list = self.query_one(OptionList)
        hits_list.clear_options()
        if not self.query_text:
            self.hits, self.more = [], False
            status.update(Text(""))
            return
        self.hits, self.more = await reader.search_hits(self.query_text, limit=LIMIT)
        if not self.titles:
            self.titles = {s.id: s.title for s in await reader.sessions()}
        hits_list.add_options([Option(self._row(h), id=str(i)) for i, h in enumerate(self.hits)])
        n = len(self.hits)
        if not n:
            status.update(Text(f"Nothing matches {self.query_text!r}."))
            return
        more = f"+ (the first {n:,})" if self.more else ""
        sessions = len({h.session for h in self.hits})
        status.update(Text(f"{n:,}{more} hit{'s' * (n != 1 or self.more)} in {sessions} "
                           f"session{'s' * (sessions != 1)} · enter opens"))  # fmt: skip
        hits_list.focus()
        hits_list.highlighted = 0

    def _row(self, h: Hit) -> Text:
        title = " ".join((self.titles.get(h.session) or h.session).split())[:40]
        what = format_id(h.rid) if h.rid is not None else h.role or h.tool or h.kind
        row = Text(f"{title:<40}  ", "bold", end="")
        row.append(f"{h.kind} {what}"[:22].ljust(22), "dim")
        row.append("  ")
        row.append(h.snippet)
        return row

    @on(OptionList.OptionSelected, "#search-hits")
    def _open(self, event: OptionList.OptionSelected) -> None:
        from ctxview.viewer.screens.transcript import TranscriptScreen

        hit = self.hits[int(event.option.id or 0)]
        self.app.push_screen(TranscriptScreen(hit.session, search=(self.query_text, hit.seq)))

    def action_back(self) -> None:
        self.app.pop_screen()
