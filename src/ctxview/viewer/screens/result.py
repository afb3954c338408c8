"""One result in full: the stored text (or, with `m`, what the model was shown), its bracket's
facts, what points back at it, and for a file the chain of its reads, edits and stubs."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from ctxview.rules.config import Config
from ctxview.rules.ids import format_id
from ctxview.store.records import Event
from ctxview.viewer.layout.outline import EDIT_KINDS
from ctxview.viewer.messages import Jump, OpenResult
from ctxview.viewer.render.blocks import plain
from ctxview.viewer.render.colours import Palette, palette_for
from ctxview.viewer.render.links import linkify
from ctxview.viewer.screens.teardown import CtxviewScreen
from ctxview.viewer.widgets.footer import KeysFooter as Footer
from ctxview.viewer.widgets.prompt import PromptBar
from ctxview.viewer.widgets.result_view import ResultView
from ctxview.viewer.wording import count

CHAIN_MAX = 40


def click(rid: int) -> Style:
    return Style(meta={"@click": f"screen.open_rid({rid})"})


class ResultScreen(CtxviewScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("slash", "search_prompt", "Search"),
        Binding("n", "next_match(1)", "Next", show=False),
        Binding("N", "next_match(-1)", "Previous", show=False),
        Binding("m", "toggle_mode", "Model/stored"),
        Binding("t", "in_transcript", "In transcript"),
    ]

    def __init__(self, session_id: str, rid: int) -> None:
        super().__init__()
        self.session_id = session_id
        self.rid = rid
        self.event: Event | None = None
        self.pointing: list[Event] = []
        self.chain: list[Event] = []
        self.stored_mode = True  # the stored text; `m`: what the model was shown

    def compose(self) -> ComposeResult:
        yield Static(id="result-header", classes="result-header")
        yield Static(id="result-status", classes="status-line")
        yield PromptBar()
        yield Footer()

    async def on_mount(self) -> None:
        reader = self.app.reader
        row = await reader.session(self.session_id)
        self.digits = int(row.overrides.get("ids.digits", 4)) if row else 4
        self.event = await reader.result(self.session_id, self.rid)
        body = await reader.body(self.session_id, self.rid)
        if self.event is None or body is None:
            self.query_one("#result-header", Static).update(
                Text(f"There is no result {format_id(self.rid, self.digits)} in this session.")
            )
            return
        self.shown_first, _, self.shown_body = body.shown.partition("\n")
        self.stored_text = body.stored
        self.pointing = await reader.pointing_at(self.session_id, self.rid)
        if self.event.path:
            self.chain = await reader.path_events(self.session_id, self.event.path)
        known = {e.rid for e in [*self.pointing, *self.chain] if e.rid is not None}
        self.known_rids = known | {self.rid}
        first = int(Config(row.overrides if row else {})["ids.first"])
        last = row.next_rid if row else 0
        self.is_result = lambda r: first <= r < last
        await self.show_text()

    def make_view(self) -> ResultView:
        assert self.event is not None
        text = self.stored_text if self.stored_mode else self.shown_body
        return ResultView(text, path=self.event.path, id="result-view", is_result=self.is_result,
                          read=self.event.tool == "read" and self.event.rkind != "binary",
                          diff=self.event.rkind in EDIT_KINDS)  # fmt: skip

    async def show_text(self) -> None:
        """(Re)build the text view for the mode, keeping the search."""
        old = getattr(self, "view", None)
        needle = old.needle if old is not None else ""
        if old is not None:
            await old.remove()
        self.view = self.make_view()
        await self.mount(self.view, after=self.query_one("#result-header"))
        self.view.focus()
        if needle:
            self.view.search(needle)
        self.query_one("#result-header", Static).update(self.header())
        self.status()

    async def action_toggle_mode(self) -> None:
        if getattr(self, "view", None) is None:
            return
        self.stored_mode = not self.stored_mode
        await self.show_text()

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme, self.app.console.color_system)

    def ref(self, rid: int, style: Style | None = None) -> Text:
        return Text(format_id(rid, self.digits), (style or self.palette.link) + click(rid))

    def header(self) -> Text:
        p = self.palette
        ev = self.event
        assert ev is not None
        out = linkify(plain(self.shown_first, p.bracket + Style(bold=True)), lambda r: 0, 0, p)
        # Every id in the bracket line opens its result.
        for span in list(out.spans):
            meta = span.style.meta if isinstance(span.style, Style) else {}
            if "rid" in meta:
                out.stylize(click(meta["rid"]), span.start, span.end)
        out.append("\n")
        facts = [ev.tool or "", ev.rkind or ""]
        facts.append(
            f"shown {count(ev.shown_chars or 0, 'char')}, {count(ev.shown_lines or 0, 'line')}"
        )
        facts.append(
            f"stored {count(ev.stored_chars or 0, 'char')}, {count(ev.stored_lines or 0, 'line')}"
        )
        if ev.capped:
            facts.append(f"capped: {count(ev.elided_lines or 0, 'line')} elided")
        extra = ev.extra
        if isinstance(extra.get("added"), int):
            facts.append(f"+{extra['added']} −{extra.get('removed', 0)}")
        out.append(" · ".join(f for f in facts if f), p.dim)
        mode = "the stored text" if self.stored_mode else "the model's view (what it was shown)"
        other = "the model's view" if self.stored_mode else "the stored text"
        out.append("\nshowing ", p.dim)
        out.append(mode, Style(bold=True))
        out.append(f"  (m: {other})", p.dim)
        if ev.points_to is not None:
            out.append("\nstands for ", p.dim)
            out.append_text(self.ref(ev.points_to))
        stubs = [e for e in self.pointing if e.rkind in ("unchanged", "same")]
        recalls = [e for e in self.pointing if e.rkind == "recall"]
        out.append(
            f"\n{count(len(stubs), 'stub')} and {count(len(recalls), 'recall')} point back at it",
            p.dim,
        )
        if self.pointing:
            out.append(": ", p.dim)
            for i, e in enumerate(self.pointing[:CHAIN_MAX]):
                if i:
                    out.append(", ")
                out.append_text(self.ref(e.rid or 0))
                out.append(f" {e.rkind}", p.dim)
        if self.chain:
            out.append(f"\n{ev.path}: ", p.dim)
            for i, e in enumerate(self.chain[:CHAIN_MAX]):
                if i:
                    out.append(" → ", p.dim)
                style = p.stub if e.rkind in ("unchanged", "same") else p.link
                if e.rid == self.rid:
                    style = style + Style(bold=True, reverse=True)
                out.append_text(self.ref(e.rid or 0, style))
                out.append(f" {e.tool}" + (f" {e.rkind}" if e.rkind != e.tool else ""), p.dim)
            if len(self.chain) > CHAIN_MAX:
                out.append(f" … {len(self.chain) - CHAIN_MAX} more", p.dim)
        return out

    def status(self, message: str = "") -> None:
        view = getattr(self, "view", None)
        if view is None:
            return
        parts = [f"{len(view.lines):,} lines",
                 "stored text" if self.stored_mode else "the model's view"]  # fmt: skip
        if view.needle:
            if view.matches:
                parts.append(f"match {view.match + 1}/{len(view.matches)} for {view.needle!r}")
            else:
                parts.append(f"no match for {view.needle!r}")
        if message:
            parts.append(message)
        self.query_one("#result-status", Static).update(Text(" · ".join(parts)))

    def action_open_rid(self, rid: int) -> None:
        if rid != self.rid:
            self.post_message(OpenResult(self.session_id, rid))

    def action_in_transcript(self) -> None:
        self.app.pop_screen()
        self.app.post_message(Jump(self.session_id, self.rid))

    def action_search_prompt(self) -> None:
        self.query_one(PromptBar).ask("find", "Find in this result")

    def action_next_match(self, step: int) -> None:
        if getattr(self, "view", None) is not None:
            self.view.next_match(step)
            self.status()

    @on(PromptBar.Submitted)
    def _find(self, event: PromptBar.Submitted) -> None:
        if getattr(self, "view", None) is None:
            return
        self.view.focus()
        if event.kind == "find":
            self.view.search(event.value)
            self.status()
