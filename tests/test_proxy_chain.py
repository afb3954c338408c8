"""Responses requests whose conversation the upstream keeps (`previous_response_id`,
`conversation`): which session they join, and `--elide` leaving them as they came (they carry
only their new items). Keying and the rewrite are pure; the recorder is the real one over a
real store, started again between two requests of a chain."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from ctxview.proxy import keying, protocols
from ctxview.proxy.answers import Answer
from ctxview.proxy.record import Exchange
from ctxview.proxy.recorder_process import Storing
from ctxview.proxy.rewrite import HELD_UPSTREAM, Rewriter
from ctxview.rules.config import Config

R = protocols.RESPONSES
HEADERS = {"content-type": "application/json"}


def _output(i: int) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": f"call_{i}", "output": "x" * 5000}


def test_a_chain_joins_the_session_of_the_response_it_continues() -> None:
    first = {"model": "m", "instructions": "You read files.", "input": "read every file"}
    other = {**first, "input": "something else"}
    one, two = (keying.session_key(R, HEADERS, b) for b in (first, other))
    assert one != two  # a string input is the conversation's first user message
    # As a client resends it, the list form opens the same conversation.
    listed = {**first, "input": [{"role": "user", "content": "read every file"}]}
    assert keying.session_key(R, HEADERS, listed) == one
    chained = {"model": "m", "instructions": "You read files.", "previous_response_id": "resp_1",
               "input": [_output(1)]}  # fmt: skip
    assert keying.session_key(R, HEADERS, chained, {"resp_1": one}) == one
    # A chain whose start the proxy never saw: keyed by the response it continues, so its next
    # link (which continues this one's answer) can join it.
    alone = keying.session_key(R, HEADERS, chained, {})
    assert alone.startswith("px-") and alone not in (one, two)
    assert alone == keying.session_key(R, HEADERS, chained)
    # A stored conversation names itself.
    conv = {"model": "m", "conversation": {"id": "conv_9"}, "input": [_output(2)]}
    assert keying.session_key(R, HEADERS, conv) == keying.session_key(
        R, HEADERS, {**conv, "conversation": "conv_9", "input": "hi"})  # fmt: skip
    assert keying.held_upstream(R, chained) and keying.held_upstream(R, conv)
    assert not keying.held_upstream(R, first)
    assert not keying.held_upstream(protocols.CHAT, chained)


def test_elide_leaves_a_continuation_as_it_came_however_large() -> None:
    """Its items are the newest of a conversation kept upstream: the rule's size is not theirs
    and its oldest entries here are the live window's. Before, a large one was elided."""
    rw = Rewriter(elide=True, config=Config({"elide.threshold_chars": 20_000,
                                              "elide.min_chars": 300}))  # fmt: skip
    items = [x for i in range(40) for x in (
        {"type": "function_call", "call_id": f"call_{i}", "name": "cat", "arguments": "{}"},
        _output(i))]  # fmt: skip
    for held in ({"previous_response_id": "resp_7"}, {"conversation": "conv_1"}):
        raw = json.dumps({"model": "m", **held, "input": items}).encode()
        done = rw.rewrite(R, list(HEADERS.items()), raw)
        assert done.body == raw and not done.changed and not done.texts
        assert done.note == HELD_UPSTREAM
    # The same items as a whole conversation are elided.
    raw = json.dumps({"model": "m", "input": items}).encode()
    assert rw.rewrite(R, list(HEADERS.items()), raw).changed


def _exchange(body: dict[str, Any], answer_id: str, started: float) -> Exchange:
    answer = Answer(body={"id": answer_id, "object": "response", "status": "completed",
                          "output": [], "usage": {"input_tokens": 1, "output_tokens": 1}},
                    complete=True)  # fmt: skip
    return Exchange("POST", "/v1/responses", "http://127.0.0.1:9", R,
                    [("content-type", "application/json")], json.dumps(body).encode(), started,
                    status=200, answer=answer)  # fmt: skip


def test_a_chain_stays_one_session_across_a_recorder_started_again(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    first = {"model": "m", "instructions": "You read files.", "input": "read every file"}
    chained = {"model": "m", "instructions": "You read files.", "previous_response_id": "resp_1",
               "input": [_output(1)]}  # fmt: skip
    further = {**chained, "previous_response_id": "resp_2", "input": [_output(2)]}

    async def run() -> list[str]:
        now = time.time()
        a = Storing(store)
        await a.record(_exchange(first, "resp_1", now), live=False)
        await a.close()
        b = Storing(store)  # knows none of the answers: the store does
        await b.record(_exchange(chained, "resp_2", now + 1), live=False)
        await b.record(_exchange(further, "resp_3", now + 2), live=False)
        await b.close()
        conn = sqlite3.connect(store)
        try:
            return [s for (s,) in conn.execute("SELECT session FROM proxy_records")]
        finally:
            conn.close()

    sessions = asyncio.run(run())
    assert len(sessions) == 3 and len(set(sessions)) == 1
