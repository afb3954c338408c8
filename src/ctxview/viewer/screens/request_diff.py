"""What changed since the session's previous request (`d` on the context screen): the messages
added, where the two requests first differ — where the prompt cache broke — with the reason in
words (the first request, the cache's lifetime passed, the system prompt or tools changed, an
edit inside the prefix naming its block, a compaction, an elision stride), the cached prefix's
length, and the answer's own usage. `[` and `]` step through the session's requests."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from ctxview.context.request_diff import Change, diff, lifetime
from ctxview.context.requests import canonical_json
from ctxview.context.session_requests import (
    SentRequest,
    message_text,
    session_requests,
    usage_words,
)
from ctxview.viewer.screens.teardown import CtxviewScreen
from ctxview.viewer.widgets.footer import KeysFooter as Footer
from ctxview.viewer.widgets.wrapped_text import WrappedText

# The reason's name in the title, as a person says it.
REASONS = {
    "first": "first request",
    "kept": "cache kept",
    "ttl": "cache expired",
    "system": "system prompt changed",
    "tools": "tools changed",
    "stride": "elision stride",
    "edit": "edit in the prefix",
    "compaction": "compaction",
}


def prefix_words(change: Change, prev: SentRequest | None) -> str:
    """The cached prefix: what the cache could serve of the previous request, and its size."""
    if prev is None:
        return "Cached prefix: none yet (nothing was sent before)."
    msgs = prev.messages()[: change.kept]
    chars = len(canonical_json(msgs)) if msgs else 0
    if change.reason in ("ttl", "system", "tools"):
        return (f"Cached prefix: nothing ({change.kept} leading messages shared, "
                f"{chars:,} chars, written again).")  # fmt: skip
    where = (f"; first difference at message {change.first_diff}"
             if change.first_diff is not None else "")  # fmt: skip
    return (f"Cached prefix: system, tools and {change.kept} of the previous request's "
            f"{len(prev.messages())} messages ({chars:,} chars of messages){where}.")  # fmt: skip


def body_text(change: Change, prev: SentRequest | None, req: SentRequest) -> str:
    """The messages added, and for a break inside the prefix the message before and after."""
    new = req.messages()
    lines: list[str] = []
    if prev is not None and change.first_diff is not None:
        old = prev.messages()
        i = change.first_diff
        lines.append(f"── message {i} in the previous request ──")
        lines.append(message_text(old[i], i) if i < len(old) else "(none)")
        lines.append("")
        lines.append(f"── message {i} now ──")
        lines.append(message_text(new[i], i) if i < len(new) else "(none: the request is shorter)")
        lines.append("")
    start = change.kept if prev is not None else 0
    added = new[start:]
    lines.append(f"── {len(added)} message{'s' * (len(added) != 1)} after the shared prefix "
                 f"(from message {start}) ──")  # fmt: skip
    for j, m in enumerate(added, start):
        lines.append(message_text(m, j))
        lines.append("")
    return "\n".join(lines).rstrip("\n")


class RequestDiffScreen(CtxviewScreen[None]):
    """One recorded request against the session's previous one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("left_square_bracket", "step(-1)", "Previous request"),
        Binding("right_square_bracket", "step(1)", "Next request"),
    ]
    FOOTER_ORDER: ClassVar[tuple[str, ...]] = ("step(-1)", "step(1)")

    DEFAULT_CSS = """
    RequestDiffScreen #diff-reason { padding: 0 1; text-style: bold; color: $ctx-dim; }
    RequestDiffScreen #diff-reason.-kept { color: $ctx-diff-add; }
    RequestDiffScreen #diff-reason.-ttl, RequestDiffScreen #diff-reason.-stride {
        color: $ctx-elision;
    }
    RequestDiffScreen #diff-reason.-edit, RequestDiffScreen #diff-reason.-system,
    RequestDiffScreen #diff-reason.-tools, RequestDiffScreen #diff-reason.-compaction {
        color: $ctx-diff-remove;
    }
    RequestDiffScreen #diff-prefix { padding: 0 1; color: $ctx-recall; }
    RequestDiffScreen #diff-usage { padding: 0 1; color: $ctx-dim; }
    RequestDiffScreen WrappedText { height: 1fr; border-top: solid $ctx-bracket; }
    """

    def __init__(self, session_id: str, *, request: int | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.request = request or 0
        self.requests: list[SentRequest] = []
        self.change: Change | None = None
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Static(id="diff-title", classes="title-line")
        yield Static(id="diff-reason")
        yield Static(id="diff-prefix")
        yield Static(id="diff-usage")
        yield WrappedText(id="diff-log")
        yield Footer()

    async def on_mount(self) -> None:
        self.requests = await session_requests(self.app.reader, self.session_id)
        if not self.requests:
            self.query_one("#diff-title", Static).update(Text(
                f"No recorded requests in {self.session_id}: what changed between requests is "
                f"known for sessions run through `ctxview run` / `ctxview proxy`, or whose "
                f"transcript records its requests."))  # fmt: skip
            return
        n = len(self.requests)
        self.show(min(max(1, self.request or n), n))

    def show(self, k: int) -> None:
        self.request = k
        req = self.requests[k - 1]
        prev = self.requests[k - 2] if k > 1 else None
        change = self.change = diff(prev.body if prev else None, req.body,
                                    prev.ts if prev else None, req.ts)  # fmt: skip
        gap = f" · {change.gap_seconds:,.0f} s after it" if change.gap_seconds is not None else ""
        life = f" (cache lifetime {lifetime(prev.body):,.0f} s)" if prev is not None else ""
        against = f"against request {k - 1}{gap}{life}" if prev else "the session's first"
        title = (f"Request {k} of {len(self.requests)} {against} · "
                 f"{REASONS.get(change.reason, change.reason)} · {self.session_id}")  # fmt: skip
        self.query_one("#diff-title", Static).update(Text(title))
        reason = self.query_one("#diff-reason", Static)
        reason.set_classes(f"-{change.reason}")
        reason.update(Text(change.detail))
        self.query_one("#diff-prefix", Static).update(Text(prefix_words(change, prev)))
        self.query_one("#diff-usage", Static).update(
            Text(f"The answer's own {usage_words(req.real_usage())}.")
        )
        self.text = body_text(change, prev, req)
        self.query_one(WrappedText).set_text(self.text)

    def action_step(self, step: int) -> None:
        if self.requests:
            k = min(max(1, self.request + step), len(self.requests))
            if k != self.request:
                self.show(k)

    def screen_text(self) -> Any:
        return self.text
