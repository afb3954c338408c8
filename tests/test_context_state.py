"""The context as sent (src/ctxview/context/state.py): requests, messages, compaction, elision, the cache
model, the arms; and the engine running a live session with elision on, over a real store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxview.context.state import (
    ContextState,
    figures,
    load_texts,
    render_context,
    replay,
    replay_arms,
)
from ctxview.engine.session import Session
from ctxview.rules.config import Config
from ctxview.store import Reader, Writer
from ctxview.store.records import Event

SMALL = {"elide.enabled": True, "elide.threshold_chars": 100, "elide.min_chars": 20,
         "elide.stride": 4, "elide.keep": 2}  # fmt: skip


class Log:
    """Builds a session's events as the store holds them."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.texts: dict[int, str] = {}
        self.rid = 0x1000

    def _add(self, **fields: Any) -> Event:
        ev = Event(ts=0.0, seq=len(self.events) + 1, **fields)
        self.events.append(ev)
        return ev

    def user(self, text: str) -> None:
        self._add(kind="message", role="user", text=text)

    def assistant(self, text: str = "", **data: Any) -> None:
        self._add(kind="message", role="assistant", text=text,
                  data=json.dumps(data) if data else None)  # fmt: skip

    def system(self, text: str) -> None:
        self._add(kind="message", role="system", text=text)

    def call(self, tool: str = "t", ref: str | None = None) -> str:
        ref = ref or f"c{len(self.events)}"
        self._add(kind="call", tool=tool, call_ref=ref, args="{}")
        return ref

    def result(self, body: str, *, ref: str | None = None, seen: int | None = None,
               stored: int | None = None, tool: str = "t") -> int:  # fmt: skip
        rid = self.rid
        self.rid += 1
        shown = f"[#{rid:04x}]\n{body}"
        self.texts[rid] = shown
        self._add(kind="result", tool=tool, call_ref=ref, rid=rid, rkind="full",
                  shown_chars=len(shown), stored_chars=stored if stored is not None else len(body),
                  seen_chars=seen)  # fmt: skip
        return rid

    def tool(self, body: str, **kw: Any) -> int:
        ref = self.call()
        return self.result(body, ref=ref, **kw)

    def compact(self, summary: str, inserted: str) -> None:
        self._add(kind="compaction", text=summary, data=json.dumps({"inserted": inserted}))


def feed_all(state: ContextState, log: Log) -> list[list[str]]:
    """Feed every event; the rendered context of each request, as it starts."""
    sent: list[list[str]] = []
    for ev in log.events:
        if state.starts_request(ev):
            state.advance()
            sent.append([_render(m, log) for m in state.msgs])
        state.feed(ev, log.texts.get(ev.rid) if ev.rid is not None else None)
    return sent


def _render(m: Any, log: Log) -> str:
    if m.text is None and m.stub is None:
        m.text = log.texts[m.rid]
    return m.render()


def test_each_assistant_message_starts_a_request_with_what_came_before() -> None:
    log = Log()
    log.user("fix it")
    log.assistant("looking")
    log.tool("x" * 10)
    log.system("hook ran")  # a transcript marker, not sent
    log.assistant("done")
    state = ContextState(Config())
    sent = feed_all(state, log)
    assert sent[0] == ["user: fix it"]
    assert sent[1] == [
        "user: fix it",
        "assistant: looking\ncall t {}",
        "tool: [#1000]\n" + "x" * 10,
    ]
    assert [r.messages for r in state.requests] == [1, 3]
    assert state.requests[1].sent_chars == len("\n".join(sent[1]))


def test_parallel_calls_belong_to_the_response_that_made_them() -> None:
    log = Log()
    log.user("go")
    log.assistant("two at once")
    a = log.call(ref="A")
    log.result("a", ref=a)
    b = log.call(ref="B")
    log.result("b", ref=b)
    log.assistant("next")
    state = ContextState(Config())
    sent = feed_all(state, log)
    assert len(state.requests) == 2
    assert sent[1][1] == "assistant: two at once\ncall t {}\ncall t {}"
    assert [m.role for m in state.msgs] == ["user", "assistant", "tool", "tool", "assistant"]


def test_a_continued_response_is_the_same_request_and_its_usage_adds_up() -> None:
    log = Log()
    log.user("go")
    log.assistant("part one", usage={"input_tokens": 10, "cache_write_tokens": 5})
    log.tool("a")
    log.assistant("part two", continued=True, usage={"output_tokens": 7})
    log.assistant("new response")
    state = ContextState(Config())
    sent = feed_all(state, log)
    assert len(state.requests) == 2
    assert sent[1][1] == "assistant: part one\n\npart two\ncall t {}"
    usage = state.requests[0].usage
    assert usage is not None
    assert (usage.input_tokens, usage.cache_write_tokens, usage.output_tokens) == (10, 5, 7)


def test_without_assistant_messages_each_call_after_a_result_is_a_request() -> None:
    log = Log()
    log.user("go")
    log.tool("a")
    log.tool("b")
    log.call()
    log.call()  # logged together: one response
    state = ContextState(Config())
    feed_all(state, log)
    assert len(state.requests) == 3
    assert state.msgs[-1].role == "assistant" and len(state.msgs[-1].calls) == 2


def test_compaction_replaces_the_context_and_breaks_the_prefix() -> None:
    log = Log()
    log.user("go")
    log.assistant("a")
    log.tool("x" * 50)
    log.compact("summary", "summary\n\n## Files read before this summary")
    log.assistant("b")
    log.assistant("c")
    state = ContextState(Config())
    sent = feed_all(state, log)
    assert sent[1] == ["user: summary\n\n## Files read before this summary"]
    r = state.requests
    assert r[1].prefix_break == "compaction" and r[1].cache_read_chars == 0
    assert r[2].prefix_break is None and r[2].cache_read_chars == r[1].sent_chars
    assert r[2].cache_write_chars == r[2].sent_chars - r[1].sent_chars


def test_a_stride_reads_the_prefix_before_the_first_elided_message() -> None:
    log = Log()
    log.user("go")
    for _ in range(4):
        log.assistant("a")
        log.tool("x" * 60)
    log.assistant("z")
    state = ContextState(Config(SMALL))
    sent = feed_all(state, log)
    stride = next(r for r in state.requests if r.prefix_break)
    assert stride.prefix_break == "stride"
    assert stride.elided == [0x1000]
    before = sent[stride.index - 2]
    now = sent[stride.index - 1]
    # The cache reads the whole messages the two requests share: the two before the stub.
    assert now[:2] == before[:2] and now[2] != before[2]
    assert stride.cache_read_chars == len("\n".join(before[:2]))
    assert now[2] == "tool: [#1000 elided: 68 chars of t; recall #1000 to see it]"


def test_no_measure_counts_what_the_agent_got_and_the_summary_alone() -> None:
    log = Log()
    log.user("go")
    log.assistant("a")
    log.tool("y" * 30, seen=500)  # the agent got 500 characters; 3.0.0 shows 38
    log.tool("z" * 30, stored=900)  # no seen: the stored text
    log.compact("sum", "sum\n\n" + "t" * 100)
    log.assistant("b")
    states = replay_arms(log.events, Config(SMALL))
    none, hygiene = states["none"], states["hygiene"]
    assert none.requests[1].sent_chars == len("user: sum")
    assert hygiene.requests[1].sent_chars == len("user: sum\n\n") + 100
    # Request 2 (before the compaction) is not there: request 1's context is ["user: go"].
    first_tool = [m for m in none.msgs if m.role == "tool"]
    assert first_tool == []
    log2 = Log()
    log2.user("go")
    log2.assistant("a")
    log2.tool("y" * 30, seen=500)
    log2.tool("z" * 30, stored=900)
    log2.assistant("b")
    arms = replay_arms(log2.events, Config())
    n_tools = [m.text_chars for m in arms["none"].msgs if m.role == "tool"]
    h_tools = [m.text_chars for m in arms["hygiene"].msgs if m.role == "tool"]
    assert n_tools == [500, 900]
    assert h_tools == [38, 38]


def test_the_elided_arm_never_sends_more_than_hygiene() -> None:
    log = Log()
    log.user("go")
    for i in range(40):
        log.assistant(f"step {i}")
        log.tool("x" * (10 + 37 * i))
        if i == 25:
            log.compact("s", "s")
    arms = replay_arms(log.events, Config(SMALL))
    h, e = arms["hygiene"].requests, arms["elided"].requests
    assert len(h) == len(e) == 40
    assert all(b.sent_chars <= a.sent_chars for a, b in zip(h, e, strict=True))
    fe, fh = figures(arms["elided"]), figures(arms["hygiene"])
    assert fe.sent_chars < fh.sent_chars
    assert fe.prefix_breaks == fe.strides + fe.compactions > fh.prefix_breaks == 1


def test_tokens_use_the_last_usage_then_chars_over_four() -> None:
    log = Log()
    log.user("go")
    log.assistant("a", usage={"input_tokens": 1, "cache_read_tokens": 999})
    log.tool("x" * 400)
    state = ContextState(Config())
    feed_all(state, log)
    grown = state.sent_chars - state.requests[0].sent_chars
    assert state.tokens() == 1000 + (grown + 3) // 4
    log.compact("s", "s")
    state.feed(log.events[-1])
    assert state.tokens() == 2  # "user: s", 7 chars; the old usage no longer applies


def test_replay_until_a_request_gives_that_requests_context() -> None:
    log = Log()
    log.user("go")
    for i in range(12):
        log.assistant(f"s{i}")
        log.tool("x" * 60)
    state = ContextState(Config(SMALL))
    sent = feed_all(state, log)
    for k in (1, 5, 9, 12):
        at = replay(log.events, Config(SMALL), until_request=k)
        assert [_render(m, log) for m in at.msgs] == sent[k - 1]


# The engine, live, over a real store


async def _session(tmp_path: Path, config: dict[str, Any] | None) -> tuple[Writer, Session]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    writer = await Writer.open(tmp_path / "store.db")
    return writer, await Session.start(writer, tmp_path / "ws", config=config)


async def _events(path: Path, sid: str) -> list[Event]:
    async with await Reader.open(path) as reader:
        return await reader.events(sid)


async def test_a_live_session_with_elision_on_sends_stubs_and_stores_its_strides(
    tmp_path: Path,
) -> None:
    writer, s = await _session(tmp_path, SMALL)
    try:
        await s.message("user", "go")
        for i in range(7):
            context = await s.context()
            await s.message("assistant", f"step {i}")
            await s.insert("bash", {"command": f"echo {i}"}, "x" * 60)
        context = await s.context()
        roles = [m["role"] for m in context]
        assert roles[:4] == ["user", "assistant", "tool", "assistant"]
        assert context[1]["calls"] == [{"id": context[2]["call_id"], "tool": "bash",
                                        "args": {"command": "echo 0"}}]  # fmt: skip
        stubbed = [m for m in context if m["role"] == "tool" and "elided" in m["text"]]
        assert [m["rid"] for m in stubbed] == [0x1000, 0x1001, 0x1002, 0x1003, 0x1004]
        assert stubbed[0]["text"] == "[#1000 elided: 68 chars of bash; recall #1000 to see it]"
        assert stubbed[0]["elided_at"] == 4  # the request after the third result
        events = await _events(writer.path, s.id)
        strides = [e.extra for e in events if e.kind == "elide"]
        assert [d["rids"] for d in strides] == [[0x1000], [0x1001, 0x1002], [0x1003, 0x1004]]
        assert [d["boundary"] for d in strides] == [4, 8, 12]
        # Each stride is stored before the request it was taken for.
        kinds = [e.kind for e in events]
        first = kinds.index("elide")
        assert kinds[first + 1] == "message"
        # recall brings an elided result back whole.
        await s.message("assistant", "need it again")
        back = await s.run("recall", {"id": "#1000"})
        assert back == "[#1007 recall #1000 lines 1-1 of 1]\n" + "x" * 60
        text = await s.context_text()
        assert text.endswith("tool: " + back)
    finally:
        await writer.close()


async def test_the_store_replays_to_the_context_the_engine_sent(tmp_path: Path) -> None:
    writer, s = await _session(tmp_path, SMALL)
    try:
        await s.message("user", "go")
        for i in range(9):
            await s.message("assistant", f"step {i}")
            await s.insert("t", {}, f"out {i}\n" * (3 + i))
            if i == 4:
                await s.compact("halfway")
        live = await s.context_text()
        events = await _events(writer.path, s.id)
        state = replay(events, Config(SMALL))
        state.advance()
        async with await Reader.open(writer.path) as reader:

            async def fetch(rids: list[int]) -> dict[int, str]:
                return {r: b.shown for r, b in (await reader.bodies(s.id, rids)).items()}

            await load_texts(state.msgs, fetch)
        assert render_context(state.msgs) == live
        resumed = await Session.resume(writer, s.id)
        assert await resumed.context_text() == live
    finally:
        await writer.close()


async def test_elision_is_off_unless_asked(tmp_path: Path) -> None:
    writer, s = await _session(tmp_path, {"elide.threshold_chars": 10, "elide.min_chars": 1})
    try:
        await s.message("user", "go")
        for i in range(40):
            await s.message("assistant", f"step {i}")
            await s.insert("t", {}, "x" * 100)
        context = await s.context()
        assert not any("elided" in (m["text"] or "") for m in context)
        assert not [e for e in await _events(writer.path, s.id) if e.kind == "elide"]
    finally:
        await writer.close()


async def test_compact_due_is_an_event_and_a_flag_until_the_harness_compacts(
    tmp_path: Path,
) -> None:
    writer, s = await _session(tmp_path, {"compaction.above_tokens": 50})
    try:
        await s.message("user", "go")
        await s.message("assistant", "reading")
        await s.insert("t", {}, "x" * 100)
        assert not s.compact_due
        await s.message("assistant", "more", usage={"input_tokens": 60})
        assert not s.compact_due  # an assistant message is not a boundary the trigger tests
        await s.insert("t", {}, "y")
        assert s.compact_due
        await s.insert("t", {}, "z")
        due = [e.extra for e in await _events(writer.path, s.id) if e.kind == "compact_due"]
        assert len(due) == 1 and due[0]["above_tokens"] == 50 and due[0]["tokens"] > 50
        await s.compact("short")
        assert not s.compact_due
    finally:
        await writer.close()


async def test_usage_from_the_harness_lands_on_the_request(tmp_path: Path) -> None:
    writer, s = await _session(tmp_path, None)
    try:
        await s.message("user", "go")
        await s.message("assistant", "a")
        await s.usage(input_tokens=3, output_tokens=4, cache_read_tokens=5, cache_write_tokens=6)
        events = await _events(writer.path, s.id)
        assert [e.kind for e in events] == ["message", "message", "usage"]
        state = replay(events, Config())
        usage = state.requests[0].usage
        assert usage is not None and usage.prompt_tokens == 14
        await s.message("assistant", "b", usage={"input_tokens": 1, "cache_read_tokens": 9})
        events = await _events(writer.path, s.id)
        assert json.loads(events[-1].data or "{}")["usage"]["cache_read_tokens"] == 9
    finally:
        await writer.close()


@pytest.mark.parametrize("bad", [{"elide.stride": "4"}, {"elide.enabled": 1}])
def test_bad_elide_config_is_refused(bad: dict[str, Any]) -> None:
    from ctxview.rules.config import ConfigError

    with pytest.raises(ConfigError):
        Config(bad)
