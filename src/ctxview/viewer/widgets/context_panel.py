"""The context panel of a transcript (`c`): the context's size at every request with no measure,
with 3.0.0 and with 3.0.0 plus elision; where the cached prefix broke (compactions, elision
strides); the cache-hit ratio from the usage records; the request and result under the cursor.

The figures come from replaying the session's events (`src/ctxview/context/state.py`), fed incrementally
as rows arrive. Everything is drawn as `rich.text.Text`, never markup.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import getters
from textual.widget import Widget

from ctxview.context.request_diff import diffs
from ctxview.context.requests import canonical_json
from ctxview.context.session_requests import SentRequest, session_requests, usage_words
from ctxview.context.state import ARMS, ContextState, Request, arm_state
from ctxview.rules.config import Config, ConfigError
from ctxview.rules.ids import format_id
from ctxview.viewer.reader_app import ReaderApp

BARS = "▁▂▃▄▅▆▇█"
LABEL = 10
ARM_LABELS = {"none": "none", "hygiene": "3.0.0", "elided": "elided"}
# Events replayed between two paints: ~0.1 s of feeding three arms on this machine.
PAGE = 2000


def sparkline(values: Sequence[float], width: int, top: float) -> str:
    """`values` in `width` columns (each column the largest of its bucket), scaled to `top`;
    a space where there is no value (None is not allowed: pass -1)."""
    if width <= 0 or not values:
        return ""
    cols = bucketed(values, width)
    out = []
    for v in cols:
        if v < 0:
            out.append(" ")
        elif top <= 0:
            out.append(BARS[0])
        else:
            out.append(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))])
    return "".join(out)


def bucket_size(n: int, width: int) -> int:
    return max(1, -(-n // width))


def bucketed(values: Sequence[float], width: int) -> list[float]:
    size = bucket_size(len(values), width)
    return [max(values[i : i + size]) for i in range(0, len(values), size)]


def column_of(index: int, n: int, width: int) -> int:
    """The column a 0-based request index falls in."""
    return index // bucket_size(n, width)


@dataclass
class ContextFigures:
    """The replayed arms of one session, fed as its events arrive."""

    config: Config
    elide_on: bool  # the session's own config: "as sent" is the elided arm, else 3.0.0
    states: dict[str, ContextState] = field(default_factory=dict)
    last_seq: int = 0
    fed: int = 0  # events replayed so far
    total: int = 0  # the session's events when the panel opened (the progress shown)
    done: bool = False  # replayed to the last event there was
    # The requests as sent (the proxy's record, or Claude Code's own in its transcript), when
    # there is one: the real sizes, prefix breaks and usage, beside the replayed arms.
    recorded: list[SentRequest] = field(default_factory=list)

    @classmethod
    def for_session(cls, overrides: dict[str, Any]) -> ContextFigures:
        try:
            config = Config(overrides)
        except ConfigError:
            config = Config()
        figures = cls(config, bool(config["elide.enabled"]))
        figures.states = {arm: arm_state(config, arm) for arm in ARMS}
        return figures

    async def load(self, reader: Any, session_id: str,
                   on_page: Callable[[], Awaitable[None]] | None = None) -> bool:  # fmt: skip
        """Feed the events past the last one seen, a page at a time (`on_page` after each, so a
        panel paints what is replayed so far); True when there were any."""
        grew = False
        while True:
            page = await reader.events(session_id, after=self.last_seq, limit=PAGE)
            if not page:
                self.done = True
                return grew
            states = list(self.states.values())
            for ev in page:
                for state in states:
                    state.feed(ev)
            self.fed += len(page)
            self.last_seq = page[-1].seq
            grew = True
            if len(page) < PAGE:  # the last page: caught up (painted as done, not "replaying")
                self.done = True
            if on_page is not None:
                await on_page()
            if self.done:
                return grew
            await asyncio.sleep(0)  # the app's frames and keys between pages

    @property
    def sent_arm(self) -> str:
        return "elided" if self.elide_on else "hygiene"

    def requests(self, arm: str) -> list[Request]:
        return self.states[arm].requests

    def request_at(self, seq: int) -> int:
        """The request (1-based) a transcript row belongs to: the last one started at or before
        it; 1 before the first."""
        starts = [r.seq for r in self.requests("hygiene")]
        if not starts:
            return 0
        return max(1, bisect.bisect_right(starts, seq))

    def elided_at(self, rid: int) -> int | None:
        return self.states["elided"].elided_at.get(rid)


def panel_text(fig: ContextFigures, width: int, cursor_seq: int | None, cursor_rid: int | None,
               digits: int = 4) -> Text:  # fmt: skip
    """The panel's lines for a width: sparklines per arm on one scale, break marks, cache hits,
    the request and the result under the cursor."""
    out = Text(no_wrap=True, overflow="ellipsis")
    reqs = {arm: fig.requests(arm) for arm in ARMS}
    n = len(reqs["hygiene"])
    value_w = 12
    spark_w = max(10, width - LABEL - value_w - 2)
    cur = fig.request_at(cursor_seq) if cursor_seq is not None and n else 0
    peak = max((r.sent_chars for arm in ARMS for r in reqs[arm]), default=0)
    sent_name = "3.0.0 + elision" if fig.elide_on else "3.0.0 (elision off)"
    out.append("Context per request", "bold")
    replaying = not fig.done
    if replaying:
        share = f" ({fig.fed / fig.total:.0%})" if fig.total else ""
        out.append(f" · replaying the session: {fig.fed:,} of {fig.total:,} events{share}…",
                   "yellow")  # fmt: skip
        if cursor_seq is not None and cursor_seq > fig.last_seq:
            cur = 0  # the cursor's request is not replayed yet
            cursor_rid = None
    out.append(f" · {n:,} request{'s' * (n != 1)} · as sent: {sent_name} · peak {peak:,} chars"
               " · x: the context as sent at the cursor", "dim")  # fmt: skip
    if not n:
        if fig.recorded:  # requests seen by the proxy, no transcript: their record alone
            recorded_rows(out, fig, spark_w, max(peak, 1), 0)
        elif not replaying:
            out.append("\nNo requests yet: the model has not been called in this session.",
                       "dim")  # fmt: skip
        return out
    for arm in ARMS:
        values = [r.sent_chars for r in reqs[arm]]
        label = ARM_LABELS[arm] + (" ◂" if arm == fig.sent_arm else "")
        out.append(f"\n{label:<{LABEL}}", "bold" if arm == fig.sent_arm else "")
        out.append(sparkline(values, spark_w, peak), "green" if arm == "elided" else "")
        out.append(f"  {values[cur - 1] if cur else 0:>{value_w - 2},}", "dim")
    # Where the cached prefix broke: C a compaction, s an elision stride (in the elided arm).
    marks = [" "] * len(bucketed([0.0] * n, spark_w))
    for r in reqs["elided"]:
        if r.prefix_break:
            col = column_of(r.index - 1, n, spark_w)
            if marks[col] != "C":
                marks[col] = "C" if r.prefix_break == "compaction" else "s"
    out.append(f"\n{'breaks':<{LABEL}}")
    out.append("".join(marks), "yellow")
    out.append("  C compaction · s stride", "dim")
    recorded_rows(out, fig, spark_w, peak, cur if len(fig.recorded) == n else 0)
    # Cache hits from usage (the model's own counts); a space where a request has none.
    hits = [r.usage.cache_hit_ratio if r.usage and r.usage.cache_hit_ratio is not None else -1.0
            for r in reqs["hygiene"]]  # fmt: skip
    out.append(f"\n{'cache':<{LABEL}}")
    if any(h >= 0 for h in hits):
        out.append(sparkline(hits, spark_w, 1.0), "cyan")
        here = hits[cur - 1] if cur else -1
        out.append(f"  {'hit ' + format(here, '.0%') if here >= 0 else 'no usage':>{value_w - 2}}",
                   "dim")  # fmt: skip
    else:
        out.append("no usage recorded for this session", "dim")
    pointer = [" "] * len(marks)
    if cur:
        pointer[column_of(cur - 1, n, spark_w)] = "▲"
    out.append(f"\n{'cursor':<{LABEL}}")
    out.append("".join(pointer), "bold")
    if cur:
        out.append("\n" + request_line(fig, cur, digits))
    if cursor_rid is not None:
        at = fig.elided_at(cursor_rid)
        ref = format_id(cursor_rid, digits)
        if at is not None:
            sent = "is sent" if fig.elide_on else "would be sent"
            out.append(f"\n✂ {ref} left the context at request {at}: from then on it {sent} as a "
                       f"stub (recall {ref} brings it back)", "yellow")  # fmt: skip
        else:
            out.append(f"\n{ref} stays whole in every request after it", "dim")
    return out


# A recorded request's prefix break by its reason (context/request_diff.py).
BREAK_MARKS = {"ttl": "t", "edit": "e", "stride": "s", "compaction": "C", "system": "S",
               "tools": "S"}  # fmt: skip


def _size(r: SentRequest) -> int:
    return r.body_bytes or (len(canonical_json(r.body)) if r.body is not None else 0)


def recorded_rows(out: Text, fig: ContextFigures, spark_w: int, peak: int, cur: int) -> None:
    """The recorded requests' real sizes, where each broke the cached prefix and why, and the
    answers' own usage (cache reads over the prompt), on their own count of columns; `cur`:
    the cursor's request when the two counts agree."""
    rec = fig.recorded
    if not rec:  # the replayed arms alone (a transcript without request records)
        return
    sizes = [_size(r) for r in rec]
    changes = diffs([r.body for r in rec], [r.ts for r in rec])
    k = cur or len(rec)
    here, change = rec[k - 1], changes[k - 1]
    out.append(f"\n{'recorded':<{LABEL}}", "bold")
    out.append(sparkline([float(x) for x in sizes], spark_w, max(peak, *sizes)), "magenta")
    out.append(f"  {sizes[k - 1]:>{12 - 2},}", "dim")
    marks = [" "] * len(bucketed([0.0] * len(rec), spark_w))
    own = here.recorded  # Claude Code's own record: its breaks as it counts them (K)
    for i, (r, c) in enumerate(zip(rec, changes, strict=True)):
        if r.recorded is not None and r.recorded.prefix_break:
            marks[column_of(i, len(rec), spark_w)] = "K"
        elif r.recorded is None and c.broke:
            marks[column_of(i, len(rec), spark_w)] = BREAK_MARKS.get(c.reason, "K")
    out.append(f"\n{'':<{LABEL}}")
    out.append("".join(marks), "yellow")
    if own is not None:
        out.append(f"  K prefix break · request {own.n + 1}: {len(own.marks)} cache breakpoints, "
                   f"keeps {own.keep} of {own.prev_len}", "dim")  # fmt: skip
    else:
        out.append("  t expired · e edit · s stride · C compaction · S system/tools", "dim")
    usages = [r.real_usage() for r in rec]
    hits = [u.cache_hit_ratio if u and u.cache_hit_ratio is not None else -1.0 for u in usages]
    if any(h >= 0 for h in hits):
        out.append(f"\n{'real cache':<{LABEL}}")
        out.append(sparkline(hits, spark_w, 1.0), "cyan")
        out.append(f"  {'hit ' + format(hits[k - 1], '.0%') if hits[k - 1] >= 0 else '-':>10}",
                   "dim")  # fmt: skip
    which = f"request {k}" if cur else f"the last of {len(rec)}"
    out.append(f"\n{which} as sent ({here.source}): {len(here.messages())} messages · "
               f"{usage_words(usages[k - 1])} · {change.reason}", "dim")  # fmt: skip


def request_line(fig: ContextFigures, k: int, digits: int = 4) -> str:
    """One request's figures: sizes per arm, the cache model, the usage, the prefix break."""
    r = {arm: fig.requests(arm)[k - 1] for arm in ARMS}
    sent = r[fig.sent_arm]
    parts = [f"request {k}: {sent.messages} messages",
             f"{r['none'].sent_chars:,} / {r['hygiene'].sent_chars:,} / "
             f"{r['elided'].sent_chars:,} chars (none / 3.0.0 / elided)",
             f"cache reads {sent.cache_read_chars:,}, writes {sent.cache_write_chars:,} (est.)"]  # fmt: skip
    usage = r["hygiene"].usage
    if usage is not None:
        parts.append(f"usage in {usage.input_tokens:,} read {usage.cache_read_tokens:,} "
                     f"write {usage.cache_write_tokens:,} out {usage.output_tokens:,}")  # fmt: skip
    brk = r["elided"]
    if brk.prefix_break == "stride":
        ids = " ".join(format_id(x, digits) for x in brk.elided[:6])
        more = f" +{len(brk.elided) - 6}" if len(brk.elided) > 6 else ""
        parts.append(f"prefix broke: elision stride ({ids}{more} left)")
    elif brk.prefix_break == "compaction":
        parts.append("prefix broke: compaction")
    return " · ".join(parts)


class ContextPanel(Widget):
    """The panel under the transcript; `c` shows and hides it."""

    app = getters.app(ReaderApp)  # typed: the app's reader

    DEFAULT_CSS = """
    ContextPanel {
        height: auto;
        max-height: 12;
        background: $panel;
        padding: 0 1;
    }
    """

    def __init__(self, session_id: str, overrides: dict[str, Any], *, digits: int = 4,
                 figures: ContextFigures | None = None, total: int = 0) -> None:  # fmt: skip
        super().__init__(id="context-panel")
        self.session_id = session_id
        self.digits = digits
        # Figures replayed before (the panel shown, hidden, shown again) go on from where they
        # were: only the events since are fed.
        self.figures = figures if figures is not None else ContextFigures.for_session(overrides)
        self.figures.total = max(self.figures.total, total)
        self.loaded = self.figures.fed > 0
        self.opened_at = time.perf_counter()
        self.first_paint_at: float | None = None  # figures on screen (for the bench)
        self._painted = asyncio.Event()  # set with first_paint_at
        self.done_at: float | None = None
        self._cursor: tuple[int | None, int | None] = (None, None)
        # Textual asks for the height and then the render each frame: build the text once per
        # (figures, cursor, width), not twice.
        self._version = 0
        self._text: tuple[tuple[int, int | None, int | None, int], Text] | None = None

    def on_mount(self) -> None:
        self.run_worker(self._load(), group="context-panel", exclusive=True)
        # The cursor and new rows: cheap checks, only while the panel is shown.
        self.set_interval(0.2, self._poll_cursor)
        self.set_interval(1.0, self._poll_store)

    def _page(self) -> None:
        """A page replayed: paint the figures so far (the first paint comes after one page)."""
        self.loaded = True
        self._version += 1
        self.refresh(layout=True)

    async def _paint_page(self) -> None:
        """After a page: its figures painted; the first page's on screen before the replay goes
        on (a fixed 20 ms pause was too short on a loaded machine, and the replay ended before
        the panel's first frame). Bounded: a panel that is not drawn does not hold it up."""
        self._page()
        if self.first_paint_at is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._painted.wait(), timeout=1.0)

    async def _load(self) -> None:
        fig = self.figures
        await fig.load(self.app.reader, self.session_id, self._paint_page)
        # After the replay's pages (its first paint is not delayed): the recorded requests.
        reader = self.app.reader
        fig.recorded = await session_requests(reader, self.session_id)
        fig.done = True
        fig.total = max(fig.total, fig.fed)
        self._page()
        self.done_at = time.perf_counter()

    async def _poll_store(self) -> None:
        fig = self.figures
        if fig.done and await fig.load(self.app.reader, self.session_id):
            fig.total = max(fig.total, fig.fed)
            self._version += 1
            self.refresh(layout=True)

    def _poll_cursor(self) -> None:
        now = self.cursor()
        if now != self._cursor:
            self._cursor = now
            self.refresh(layout=True)

    def cursor(self) -> tuple[int | None, int | None]:
        """The (seq, rid) of the transcript's cursor block."""
        from ctxview.viewer.widgets.transcript_view import TranscriptView

        views = self.screen.query(TranscriptView)
        block = views.first().cursor_block if views else None
        if block is None:
            return None, None
        return (block.rseq or block.seq), block.rid

    def render(self) -> Text:
        if self.loaded and self.first_paint_at is None:
            self.first_paint_at = time.perf_counter()  # figures drawn (for the bench)
            self._painted.set()
        return self._panel_text(self.size.width or 100)

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        return len(self._panel_text(self.size.width or 100).plain.split("\n"))

    def _panel_text(self, width: int) -> Text:
        if not self.loaded:
            return Text("Replaying the session's requests…", "dim")
        seq, rid = self.cursor()
        key = (self._version, seq, rid, width)
        if self._text is None or self._text[0] != key:
            self._text = (key, panel_text(self.figures, width, seq, rid, self.digits))
        return self._text[1]


def keep_cursor_in_view(view: Any) -> None:
    """After the view lost height: a view following the tail goes on following it; else the
    cursor's block, if now below the view's bottom, is scrolled back into sight."""
    if getattr(view, "following", False) and hasattr(view, "action_tail"):
        view.action_tail()
        return
    block = getattr(view, "cursor_block", None)
    if block is None or block.index >= len(view.blocks):
        return
    start = view.heights.offset(block.index)
    end = start + view.heights.get(block.index)
    top, height = view.scroll_offset.y, view.size.height
    if end <= top or start >= top + height:  # no line of it on screen
        view.move_to(block)
