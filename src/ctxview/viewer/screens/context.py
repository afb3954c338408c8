"""The context exactly as sent at one request (`x` on a transcript). A session `ctxview proxy`
carried shows each request's body as the upstream received it (`j`: its JSON, whole); one whose
transcript records its requests (Claude Code 2.1.3xx) shows that record; otherwise every message
in its serialised form (`role: text`, calls under their assistant message, elision stubs in
place) is replayed from the store, a call's arguments one to a line, a string's own lines as
lines (its JSON showed them as `\n`). `[` and `]` step to the previous and next request; `d`
shows what changed since the request before (screens/request_diff.py)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from ctxview.context.session_requests import (
    SentRequest,
    as_json,
    render_sent,
    session_requests,
    usage_words,
)
from ctxview.context.state import Msg, load_texts, render_context, replay
from ctxview.rules.as_sent import render, render_call
from ctxview.rules.config import Config, ConfigError
from ctxview.store.records import Event
from ctxview.viewer.screens.teardown import CtxviewScreen
from ctxview.viewer.widgets.footer import KeysFooter as Footer
from ctxview.viewer.widgets.wrapped_text import WrappedText


class ContextScreen(CtxviewScreen[None]):
    """One request's context, as the model was sent it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        # The footer shows the key itself before the description: "[ Previous request".
        Binding("left_square_bracket", "step(-1)", "Previous request"),
        Binding("right_square_bracket", "step(1)", "Next request"),
        Binding("d", "diff", "Changes since the previous request"),
        Binding("j", "toggle_json", "The body's JSON exactly as forwarded"),
    ]
    FOOTER_ORDER: ClassVar[tuple[str, ...]] = ("step(-1)", "step(1)", "diff", "toggle_json")

    DEFAULT_CSS = """
    ContextScreen WrappedText {
        height: 1fr;
    }
    """

    def __init__(self, session_id: str, *, at_seq: int | None = None,
                 request: int | None = None) -> None:  # fmt: skip
        super().__init__()
        self.session_id = session_id
        self.at_seq = at_seq
        self.request = request or 0
        self.requests: list[int] = []  # the seq that starts each request
        self.events: list[Event] = []
        self.config = Config()
        self.text = ""  # the context on screen
        self.sent = ""  # a reconstructed context as serialised (what its sizes count)
        self.recorded: list[SentRequest] = []
        self.json = False  # `j`: the recorded body as its JSON

    def compose(self) -> ComposeResult:
        yield Static(id="context-title", classes="title-line")
        yield WrappedText(id="context-log")  # long lines folded, never cut
        yield Footer()

    async def on_mount(self) -> None:
        reader = self.app.reader
        row = await reader.session(self.session_id)
        try:
            self.config = Config(row.overrides if row is not None else {})
        except ConfigError:
            self.config = Config()
        self.events = await reader.events(self.session_id)
        # The proxy's record of each request, or Claude Code's own when its transcript carries
        # it: shown as sent; otherwise the context is rebuilt from the transcript's messages.
        self.recorded = await session_requests(reader, self.session_id)
        if self.recorded:
            self.requests = list(range(1, len(self.recorded) + 1))
            if not self.request:
                self.request = self._recorded_at(self.at_seq)
            await self.show(self.request)
            return
        whole = replay(self.events, self.config)
        self.requests = [r.seq for r in whole.requests]
        if not self.request:
            self.request = self._request_at(self.at_seq)
        await self.show(self.request)

    def _recorded_at(self, seq: int | None) -> int:
        """The last recorded request made at or before the event at `seq` (by time)."""
        at = next((e.ts for e in self.events if e.seq == seq), None) if seq else None
        if at is None:
            return len(self.recorded)
        before = [i for i, r in enumerate(self.recorded, 1) if r.ts is not None and r.ts <= at]
        return before[-1] if before else 1

    def _show_recorded(self, k: int) -> None:
        req = self.recorded[k - 1]
        self.text = as_json(req) if self.json else render_sent(req)
        n = len(self.recorded)
        if req.recorded is not None:  # Claude Code's own record
            r = req.recorded
            size = sum(r.sizes().values())
            prefix = "prefix broken here" if r.prefix_break else "prefix kept"
            exact = "exactly as sent" if r.exact else "as recorded, some messages missing"
            title = (f"Request {k} of {n}, {exact} (Claude Code's own record) · "
                     f"{_n(len(r.body['messages']), 'message')} · {_n(size, 'char')} · "
                     f"{_n(len(r.marks), 'cache breakpoint')} · {prefix} · {self.session_id}")  # fmt: skip
        else:
            shown = "its JSON" if self.json else "j: its JSON"
            count = _n(len(req.messages()), "message")
            body = "not JSON, as it came" if req.body is None else count
            title = (f"Request {k} of {n}, exactly as forwarded (ctxview proxy, {req.protocol}) · "
                     f"{body} · {_n(req.body_bytes or 0, 'byte')} · status {req.status} · "
                     f"{usage_words(req.real_usage())} · {shown} · {self.session_id}")  # fmt: skip
        self.query_one("#context-title", Static).update(Text(title))
        self.query_one(WrappedText).set_text(self.text)

    def action_toggle_json(self) -> None:
        """`j`: the recorded request as its JSON body, or as text again."""
        if not self.recorded:
            self.notify("No recorded request here: the context is a reconstruction.",
                        markup=False)  # fmt: skip
            return
        self.json = not self.json
        self._show_recorded(self.request)

    def action_diff(self) -> None:
        """`d`: what changed from the request before this one."""
        from ctxview.viewer.screens.request_diff import RequestDiffScreen  # on first use

        self.app.push_screen(RequestDiffScreen(self.session_id, request=self.request or None))

    def _request_at(self, seq: int | None) -> int:
        if not self.requests:
            return 0
        if seq is None:
            return len(self.requests)
        before = [i for i, s in enumerate(self.requests, 1) if s <= seq]
        return before[-1] if before else 1

    async def show(self, k: int) -> None:
        """Request k's context (0: the next request's, when there has been none)."""
        self.request = k
        if self.recorded:
            self._show_recorded(k)
            return
        state = replay(self.events, self.config, until_request=k or None)
        if not k:
            state.advance()
        msgs: list[Msg] = state.msgs
        reader = self.app.reader

        async def fetch(rids: list[int]) -> dict[int, str]:
            out: dict[int, str] = {}
            for i in range(0, len(rids), 500):
                out.update(await reader.shown(self.session_id, rids[i : i + 500]))
            return out

        await load_texts(msgs, fetch)
        for m in msgs:  # a result whose body is missing still renders, saying so
            if m.text is None and m.stub is None:
                m.text = f"[#{m.rid or 0:04x}: no stored text]"
        self.sent = render_context(msgs)
        self.text = "\n".join(readable(m) for m in msgs)
        stubs = sum(m.stub is not None for m in msgs)
        elision = "on" if self.config["elide.enabled"] else "off"
        which = f"request {k} of {len(self.requests)}" if k else "the next request"
        title = (f"Reconstructed (the transcript records no requests): the context at {which} · {_n(len(msgs), 'message')} · "
                 f"{_n(len(self.sent), 'char')} · {_n(stubs, 'elision stub')} "
                 f"(elision {elision}) · {self.session_id}")  # fmt: skip
        self.query_one("#context-title", Static).update(Text(title))
        self.query_one(WrappedText).set_text(self.text)

    async def action_step(self, step: int) -> None:
        if not self.requests:
            return
        k = min(max(1, self.request + step), len(self.requests))
        if k != self.request:
            await self.show(k)

    def screen_text(self) -> Any:
        return self.text


def readable(m: Msg) -> str:
    """A message of a reconstructed context as `render` serialises it, its calls readable."""
    return render(m.role, m.sent_text() or "", [readable_call(c.tool, c.args) for c in m.calls])


def readable_call(tool: str, args: str) -> str:
    """`call TOOL`, then each argument on a line of its own (`  key: value`); a string of several
    lines as its lines, indented under its key; other values as indented JSON. Arguments that
    are not a JSON object stay as they are."""
    try:
        value = json.loads(args) if args else {}
    except ValueError:
        return render_call(tool, args)
    if not isinstance(value, dict):
        return render_call(tool, args)
    lines = [f"call {tool}"]
    for key, v in value.items():
        if isinstance(v, str) and "\n" in v:
            lines.append(f"  {key}:")
            lines.extend("    " + line for line in v.split("\n"))
            continue
        text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, indent=2)
        first, *rest = text.split("\n")
        lines.append(f"  {key}: {first}")
        lines.extend("  " + line for line in rest)
    return "\n".join(lines)


def _n(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"
