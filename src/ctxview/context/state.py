"""The context as sent: the exact message list the model is sent at every request of a session.

Built from the stored events as running state (`ContextState.feed`, one event at a time, O(1)
amortised per event): nothing is re-serialised per request, sizes are kept as running sums.

Words (see also `src/ctxview/rules/as_sent.py`):

- A *request* is one call to the model. Each assistant message event starts one (importers write
  one per API response, carrying its usage; a harness records the model's reply with
  `session.message("assistant", ...)`). A session that records no assistant messages (a harness
  that logs only its tool calls) makes a request at each call that follows a non-call event.
  The context of request k is every message before the event that starts it.
- The *messages*: `user` (a person's message; after a compaction, the text the harness inserted),
  `assistant` (the model's text with the calls of that response: calls that follow an assistant
  message belong to it until the next request starts), `tool` (one per result, the text the model
  is given, or its elision stub). `system` messages are markers of the transcript (hooks, notes),
  not part of what the model is sent, and thinking is not re-sent: both are left out.
- A *compaction* replaces every message before it with one `user` message, the inserted text,
  and starts the elision window afresh (the old prefix is gone anyway).
- *Elision* (opt-in, `elide.enabled`): see `src/ctxview/rules/elide.py`. The threshold is tested on
  the context before elision, which only grows between compactions, so a session that crossed it
  stays across it. The window moves at request starts (and when a harness asks for `context()`),
  in whole strides; each stride that elides something is the one sanctioned break of the cached
  prefix besides compaction, and the engine stores it as an `elide` event.
- The *cache* is modelled as a prompt cache over the previous request's context: request k reads
  the prefix it shares with request k − 1 and writes the rest. A compaction shares nothing; a
  stride shares the messages before the first one it elided. (Cache lifetimes are not modelled.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ctxview.rules import elide as elide_rules
from ctxview.rules.as_sent import (
    Rates,
    Usage,
    bill,
    call_size,
    compact_due,
    estimate_tokens,
    render,
    render_call,
    rendered_size,
    serialised_size,
    usage_of,
)
from ctxview.rules.config import Config
from ctxview.store.records import Event


@dataclass(slots=True)
class Call:
    ref: str | None
    tool: str
    args: str  # the call's arguments as stored (JSON)


@dataclass(slots=True)
class Msg:
    """One message of the context, as sent now."""

    role: str  # user | assistant | tool
    text: str | None  # None: a result's text not loaded (it lives in the store's bodies)
    text_chars: int  # the length of the text before any stub
    chars: int = 0  # the rendered size as sent now (the stub's once elided)
    rid: int | None = None
    call_ref: str | None = None
    tool: str | None = None
    path: str | None = None
    calls: list[Call] = field(default_factory=list)
    call_chars: int = 0
    seq: int = 0  # the event it came from
    stub: str | None = None  # set once elided: the text it is sent as
    elided_at: int | None = None  # the request at which it left the context

    @property
    def full_chars(self) -> int:
        return rendered_size(self.role, self.text_chars, self.call_chars)

    def sent_text(self) -> str | None:
        return self.stub if self.stub is not None else self.text

    def render(self) -> str:
        text = self.sent_text()
        if text is None:
            raise ValueError(f"the text of result {self.rid} is not loaded")
        return render(self.role, text, [render_call(c.tool, c.args) for c in self.calls])

    def as_json(self) -> dict[str, Any]:
        """What a harness sends: role, text, the calls with their ids, the result's call id."""
        out: dict[str, Any] = {"role": self.role, "text": self.sent_text()}
        if self.calls:
            out["calls"] = [
                {"id": c.ref, "tool": c.tool, "args": _json(c.args)} for c in self.calls
            ]
        if self.role == "tool":
            out["call_id"] = self.call_ref
            out["rid"] = self.rid
            if self.stub is not None:
                out["elided_at"] = self.elided_at
        return out


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(slots=True)
class Request:
    """One request: the context it was sent, and what of it the cache already held."""

    index: int  # 1-based
    seq: int  # the event that started it
    messages: int
    sent_chars: int  # serialised size as sent
    full_chars: int  # the same context before elision
    cache_read_chars: int  # the prefix shared with the previous request's context
    prefix_break: str | None = None  # "compaction" | "stride": why less than all of it was shared
    elided: list[int] = field(default_factory=list)  # results that left the context here
    boundary: int = 0
    usage: Usage | None = None

    @property
    def cache_write_chars(self) -> int:
        return self.sent_chars - self.cache_read_chars


@dataclass
class Stride:
    request: int
    boundary: int
    rids: list[int]


class ContextState:
    """The running state of one session's context, fed its events in order.

    `hygiene=False` is the arm with no measure: results count with the text the agent really got
    (`seen_chars`, else the full stored text) and a compaction inserts its summary alone.
    `elide` None follows the session's config (`elide.enabled`); True/False force it.
    """

    def __init__(self, config: Config, *, hygiene: bool = True, elide: bool | None = None) -> None:
        self.config = config
        self.hygiene = hygiene
        self.elide = bool(config["elide.enabled"]) if elide is None else elide
        self.threshold = int(config["elide.threshold_chars"])
        self.min_chars = int(config["elide.min_chars"])
        self.stride = int(config["elide.stride"])
        self.keep = int(config["elide.keep"])
        self.above_tokens = int(config["compaction.above_tokens"])
        self.msgs: list[Msg] = []
        self.sent = 0  # the messages' sizes as sent
        self.full = 0  # the same before elision
        self.boundary = 0
        self.stable = 0  # the sizes of msgs[:boundary], which no longer change
        self.crossed = False
        self.requests: list[Request] = []
        self.strides: list[Stride] = []
        self.compactions = 0
        self.elided_at: dict[int, int] = {}  # rid -> the request at which it left
        self.compact_due = False
        self.due_events = 0
        self._saw_assistant = False
        self._current: Msg | None = None  # the assistant message of the current request
        self._last_kind: str | None = None
        self._first_change: int | None = None  # lowest index changed since the last request
        self._first_prefix = 0  # the size of the messages before it (unchanged)
        self._pending_break: str | None = None
        self._pending_elided: list[int] = []
        self._prev_sent: int | None = None  # serialised size at the previous request
        self._usage_base: tuple[int, int] | None = None  # (prompt tokens, sent size) then

    @property
    def inert(self) -> bool:
        """Feeding it can never add an event: no elision and no compaction threshold."""
        return not self.elide and self.above_tokens <= 0

    # Sizes

    @property
    def sent_chars(self) -> int:
        return serialised_size(self.sent, len(self.msgs))

    @property
    def full_chars(self) -> int:
        return serialised_size(self.full, len(self.msgs))

    def tokens(self) -> int:
        """The context's size in tokens now: the last request's prompt tokens from its usage plus
        characters / 4 of what changed since; characters / 4 alone where no usage is known."""
        now = self.sent_chars
        if self._usage_base is None:
            return estimate_tokens(now)
        base_tokens, base_chars = self._usage_base
        diff = now - base_chars
        return max(0, base_tokens + (estimate_tokens(diff) if diff >= 0 else -((-diff) // 4)))

    # Feeding events

    def starts_request(self, ev: Event) -> bool:
        if ev.kind == "message":
            if ev.role != "assistant":
                return False
            return not (ev.data and self._current is not None and ev.extra.get("continued"))
        return ev.kind == "call" and not self._saw_assistant and self._last_kind != "call"

    def feed(self, ev: Event, text: str | None = None) -> bool:
        """Take the session's next event; `text` is a result's shown text when the caller has
        it. True when, after it, a compaction became due (`compaction.above_tokens`)."""
        kind = ev.kind
        if kind == "message":
            if ev.role == "assistant":
                extra = ev.extra
                usage = Usage.from_dict(extra.get("usage"))
                if extra.get("continued") and self._current is not None and self.requests:
                    # More of a response already begun (an importer emits a split response
                    # again when its records are interleaved with results): the same request.
                    self._continue(ev.text or "", usage)
                else:
                    self._saw_assistant = True
                    self._begin_request(ev, usage)
                    text = ev.text or ""
                    self._current = self._append(Msg("assistant", text, len(text), seq=ev.seq))
            elif ev.role == "user":
                self._append(Msg("user", ev.text or "", len(ev.text or ""), seq=ev.seq))
                self._last_kind = kind
                return self._check_due()
        elif kind == "call":
            if self.starts_request(ev):
                self._begin_request(ev, None)
                self._current = self._append(Msg("assistant", "", 0, seq=ev.seq))
            elif self._current is None:
                self._current = self._append(Msg("assistant", "", 0, seq=ev.seq))
            call = Call(ev.call_ref, ev.tool or "", ev.args or "")
            grow = call_size(call.tool, call.args)
            self._current.calls.append(call)
            self._current.call_chars += grow
            self._current.chars += grow
            self.sent += grow
            self.full += grow
        elif kind == "result":
            if self.hygiene:
                chars = ev.shown_chars or 0
            else:
                chars = ev.seen_chars if ev.seen_chars is not None else (ev.stored_chars or 0)
                text = None
            self._append(Msg("tool", text, chars, rid=ev.rid, call_ref=ev.call_ref, tool=ev.tool,
                             path=ev.path, seq=ev.seq))  # fmt: skip
            self._last_kind = kind
            return self._check_due()
        elif kind == "compaction":
            self._compact(ev)
        elif kind == "elide" and self.elide:
            # A stride the engine took (at a request start or when the harness asked for the
            # context): apply it where it happened, so a replay sends what was sent.
            extra = ev.extra
            self.crossed = True
            self._elide_to(int(extra.get("boundary", 0)), len(self.requests) + 1)
        elif kind == "usage" and self.requests:
            usage = usage_of(ev.data)
            if usage is not None:
                last = self.requests[-1]
                last.usage = usage
                self._usage_base = (usage.prompt_tokens, last.sent_chars)
        if kind in ("message", "call", "result", "compaction"):
            self._last_kind = kind
        return False

    def advance(self) -> list[int]:
        """Evaluate the window for the next request: the ids it newly elides (maybe none)."""
        if not self.elide:
            return []
        if not self.crossed and elide_rules.crossed(self.full_chars, self.threshold):
            self.crossed = True
        if not self.crossed:
            return []
        b = elide_rules.boundary(len(self.msgs), self.keep, self.stride)
        return self._elide_to(b, len(self.requests) + 1)

    # Inside

    def _append(self, msg: Msg) -> Msg:
        msg.chars = msg.full_chars
        self.msgs.append(msg)
        self.sent += msg.chars
        self.full += msg.chars
        return msg

    def _elide_to(self, b: int, request: int) -> list[int]:
        if b <= self.boundary:
            return []
        b = min(b, len(self.msgs))
        newly: list[int] = []
        for i in range(self.boundary, b):
            m = self.msgs[i]
            stub = (
                elide_rules.stub(m.rid, m.text_chars, m.tool, m.path, self.config)
                if m.role == "tool"
                and m.stub is None
                and m.rid is not None
                and m.text_chars > self.min_chars
                else None
            )
            if stub is not None and elide_rules.elidable(m.text_chars, self.min_chars, len(stub)):
                assert m.rid is not None  # a stub is made for a result with an id only
                m.stub = stub
                m.elided_at = request
                new = rendered_size("tool", len(m.stub))
                self.sent += new - m.chars
                m.chars = new
                newly.append(m.rid)
                self.elided_at[m.rid] = request
                if self._first_change is None or i < self._first_change:
                    self._first_change = i
                    self._first_prefix = serialised_size(self.stable, i)
            self.stable += m.chars
        self.boundary = b
        if newly:
            self.strides.append(Stride(request, b, newly))
            self._pending_elided.extend(newly)
            self._pending_break = self._pending_break or "stride"
        return newly

    def _continue(self, more: str, usage: Usage | None) -> None:
        cur = self._current
        assert cur is not None
        if more:
            before = cur.chars
            cur.text = f"{cur.text}\n\n{more}" if cur.text else more
            cur.text_chars = len(cur.text)
            cur.chars = cur.full_chars
            self.sent += cur.chars - before
            self.full += cur.chars - before
        if usage is not None:
            last = self.requests[-1]
            last.usage = usage if last.usage is None else _add(last.usage, usage)
            self._usage_base = (last.usage.prompt_tokens, last.sent_chars)

    def _begin_request(self, ev: Event, usage: Usage | None) -> None:
        self.advance()
        sent = self.sent_chars
        if self._prev_sent is None:
            read = 0
        elif self._first_change is None:
            read = self._prev_sent
        else:
            read = min(self._first_prefix, self._prev_sent)
        req = Request(len(self.requests) + 1, ev.seq, len(self.msgs), sent, self.full_chars,
                      read, self._pending_break, self._pending_elided, self.boundary,
                      usage)  # fmt: skip
        self.requests.append(req)
        if usage is not None:
            self._usage_base = (usage.prompt_tokens, sent)
        self._prev_sent = sent
        self._first_change = None
        self._pending_break = None
        self._pending_elided = []

    def _compact(self, ev: Event) -> None:
        extra = ev.extra
        inserted = extra.get("inserted", ev.text or "") if self.hygiene else (ev.text or "")
        self.msgs = []
        self.sent = self.full = 0
        self.boundary = self.stable = 0
        self.crossed = False
        self.compact_due = False
        self._current = None
        self._usage_base = None
        self._append(Msg("user", inserted, len(inserted), seq=ev.seq))
        self.compactions += 1
        self._first_change = 0
        self._first_prefix = 0
        self._pending_break = "compaction"

    def _check_due(self) -> bool:
        if self.compact_due or not compact_due(self.tokens(), self.above_tokens):
            return False
        self.compact_due = True
        self.due_events += 1
        return True


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(a.input_tokens + b.input_tokens, a.output_tokens + b.output_tokens,
                 a.cache_read_tokens + b.cache_read_tokens,
                 a.cache_write_tokens + b.cache_write_tokens)  # fmt: skip


# Replays


@dataclass
class ArmFigures:
    """One arm's figures over a whole session."""

    requests: int = 0
    sent_chars: int = 0  # summed over all requests: what is re-sent
    cache_read_chars: int = 0
    cache_write_chars: int = 0
    prefix_breaks: int = 0  # requests whose cached prefix a compaction or a stride broke
    compactions: int = 0
    strides: int = 0
    elided_results: int = 0
    peak_chars: int = 0

    @property
    def sent_tokens(self) -> int:
        return estimate_tokens(self.sent_chars)

    def bill(self, r: Rates) -> float:
        """The estimated bill in units of one uncached input token: every request writes what
        it does not share with the previous one and reads the rest from the cache."""
        return bill(0, estimate_tokens(self.cache_write_chars),
                    estimate_tokens(self.cache_read_chars), r)  # fmt: skip

    def as_json(self, r: Rates) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "sent_chars": self.sent_chars,
            "sent_tokens": self.sent_tokens,
            "cache_read_chars": self.cache_read_chars,
            "cache_write_chars": self.cache_write_chars,
            "prefix_breaks": self.prefix_breaks,
            "compactions": self.compactions,
            "strides": self.strides,
            "elided_results": self.elided_results,
            "peak_chars": self.peak_chars,
            "bill_tokens": round(self.bill(r)),
        }


def figures(state: ContextState) -> ArmFigures:
    f = ArmFigures(requests=len(state.requests), compactions=state.compactions,
                   strides=len(state.strides), elided_results=len(state.elided_at))  # fmt: skip
    for req in state.requests:
        f.sent_chars += req.sent_chars
        f.cache_read_chars += req.cache_read_chars
        f.cache_write_chars += req.cache_write_chars
        f.prefix_breaks += req.prefix_break is not None
        f.peak_chars = max(f.peak_chars, req.sent_chars)
    return f


ARMS = ("none", "hygiene", "elided")


def arm_state(config: Config, arm: str) -> ContextState:
    """`none`: no measure; `hygiene`: 3.0.0; `elided`: 3.0.0 plus elision."""
    if arm == "none":
        return ContextState(config, hygiene=False, elide=False)
    if arm == "hygiene":
        return ContextState(config, hygiene=True, elide=False)
    if arm == "elided":
        return ContextState(config, hygiene=True, elide=True)
    raise ValueError(f"unknown arm {arm!r}")


def replay_arms(events: Iterable[Event], config: Config) -> dict[str, ContextState]:
    """All three arms over one pass of the events."""
    states = {arm: arm_state(config, arm) for arm in ARMS}
    for ev in events:
        for state in states.values():
            state.feed(ev)
    return states


def replay(events: Iterable[Event], config: Config, *, until_request: int | None = None,
           **kwargs: Any) -> ContextState:  # fmt: skip
    """The session's context as sent; with `until_request`, as it was at that request's start
    (the messages are then exactly that request's context)."""
    state = ContextState(config, **kwargs)
    for ev in events:
        if until_request is not None and state.starts_request(ev) and \
                len(state.requests) + 1 == until_request:  # fmt: skip
            state.advance()
            break
        state.feed(ev)
    return state


async def load_texts(msgs: list[Msg], fetch: Callable[[list[int]], Any]) -> None:
    """Fill in the shown text of results not loaded; `fetch(rids)` awaits {rid: shown}."""
    missing = [m.rid for m in msgs if m.text is None and m.stub is None and m.rid is not None]
    if not missing:
        return
    texts = await fetch(missing)
    for m in msgs:
        if m.text is None and m.rid in texts:
            m.text = texts[m.rid]


def render_context(msgs: list[Msg]) -> str:
    """The context's serialised form: each message rendered, joined with newlines."""
    return "\n".join(m.render() for m in msgs)
