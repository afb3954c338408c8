"""Properties of the context as sent with elision on (hypothesis).

The prefix sent at request k+1 differs from the one sent at request k only at a stride or a
compaction; at a stride only by results newly sent as stubs; a stub is the same bytes on every
later request until a compaction; the elided arm never sends more than 3.0.0 alone.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxview.context.state import ContextState, replay_arms
from ctxview.engine.session import Session
from ctxview.rules.config import Config
from ctxview.store import Writer
from ctxview.store.records import Event

_TOOL = st.tuples(st.just("tool"), st.integers(0, 400))
_ASSISTANT = st.tuples(st.just("assistant"), st.integers(0, 30))
# Weighted towards the turns of a long session (results and replies); compactions are rare.
OPS = st.lists(
    st.one_of(
        _TOOL,
        _ASSISTANT,
        _TOOL,
        _ASSISTANT,
        st.tuples(st.just("user"), st.integers(0, 60)),
        _TOOL,
        st.tuples(st.just("compact"), st.integers(0, 40)),
        _ASSISTANT,
    ),
    min_size=8,
    max_size=80,
)
CONFIG = st.fixed_dictionaries(
    {
        "elide.enabled": st.just(True),
        "elide.threshold_chars": st.integers(0, 1200),
        "elide.min_chars": st.integers(0, 200),
        "elide.stride": st.integers(1, 6),
        "elide.keep": st.integers(0, 5),
    }
)


def events_of(ops: list[tuple[str, int]]) -> tuple[list[Event], dict[int, str]]:
    events: list[Event] = []
    texts: dict[int, str] = {}
    rid = 0x1000

    def add(**fields: Any) -> None:
        events.append(Event(ts=0.0, seq=len(events) + 1, **fields))

    for op, n in ops:
        if op == "user":
            add(kind="message", role="user", text="u" * n)
        elif op == "assistant":
            add(kind="message", role="assistant", text="a" * n)
        elif op == "tool":
            ref = f"c{len(events)}"
            add(kind="call", tool="t", call_ref=ref, args="{}")
            shown = f"[#{rid:04x}]\n" + "x" * n
            texts[rid] = shown
            add(kind="result", tool="t", call_ref=ref, rid=rid, rkind="full",
                shown_chars=len(shown), stored_chars=n)  # fmt: skip
            rid += 1
        else:
            inserted = "s" * n
            add(kind="compaction", text=inserted, data=json.dumps({"inserted": inserted}))
    return events, texts


def sent_per_request(state: ContextState, events: list[Event], texts: dict[int, str]) -> list[Any]:
    """Per request: its rendered messages with the rid each stands for."""
    sent = []
    for ev in events:
        if state.starts_request(ev):
            state.advance()
            sent.append([(m.rid, m.render()) for m in state.msgs])
        state.feed(ev, texts.get(ev.rid) if ev.rid is not None else None)
    return sent


def check_prefixes(state: ContextState, sent: list[Any]) -> None:
    stubs: dict[int, str] = {}
    for k in range(1, len(sent)):
        before, now, req = sent[k - 1], sent[k], state.requests[k]
        if req.prefix_break == "compaction":
            stubs.clear()
            continue
        assert len(now) >= len(before)
        for i, (old, new) in enumerate(zip(before, now[: len(before)], strict=True)):
            if old == new:
                continue
            # Only a stride changes a message already sent, and only into a stub, now.
            assert req.prefix_break == "stride", (k, i)
            assert new[0] in req.elided and "elided" in new[1], (k, i)
        for rid, text in now:
            if rid is not None and rid in state.elided_at and "elided" in text:
                assert stubs.setdefault(rid, text) == text  # the same bytes, every request
        if req.prefix_break == "stride":
            assert req.elided and req.cache_read_chars <= sum(len(t) for _, t in before) + len(
                before
            )


@settings(max_examples=300, deadline=None)
@given(ops=OPS, overrides=CONFIG)
def test_prefix_changes_only_at_a_stride_or_a_compaction(
    ops: list[tuple[str, int]], overrides: dict[str, Any]
) -> None:
    events, texts = events_of(ops)
    state = ContextState(Config(overrides))
    sent = sent_per_request(state, events, texts)
    assert len(sent) == len(state.requests)
    check_prefixes(state, sent)
    for req, rendered in zip(state.requests, sent, strict=True):
        assert req.sent_chars == len("\n".join(t for _, t in rendered))


@settings(max_examples=200, deadline=None)
@given(ops=OPS, overrides=CONFIG)
def test_the_elided_arm_never_sends_more_than_hygiene(
    ops: list[tuple[str, int]], overrides: dict[str, Any]
) -> None:
    events, _ = events_of(ops)
    arms = replay_arms(events, Config(overrides))
    pairs = zip(arms["hygiene"].requests, arms["elided"].requests, strict=True)
    for h, e in pairs:
        assert e.sent_chars <= h.sent_chars
        assert e.full_chars == h.sent_chars  # before elision, the same context


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, overrides=CONFIG)
def test_the_engine_sends_what_the_property_allows(
    ops: list[tuple[str, int]], overrides: dict[str, Any]
) -> None:
    """The same property through the engine's face and a real store."""
    asyncio.run(_engine_run(ops, overrides))


async def _engine_run(ops: list[tuple[str, int]], overrides: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        writer = await Writer.open(root / "store.db")
        try:
            s = await Session.start(writer, root / "ws", config=overrides)
            sent: list[Any] = []
            # A harness that records the model's replies: every request is an assistant message.
            for op, n in [("assistant", 0), *ops]:
                if op == "user":
                    await s.message("user", "u" * n)
                elif op == "assistant":
                    await s.context_text()
                    sent.append([(m.rid, m.render()) for m in s.context_state.msgs])
                    await s.message("assistant", "a" * n)
                elif op == "tool":
                    await s.insert("t", {}, "x" * n)
                else:
                    await s.compact("s" * n)
            check_prefixes(s.context_state, sent)
        finally:
            await writer.close()
