"""SSE reassembly does not depend on where the bytes are cut: any split of a stream (inside a
line, a `\\r\\n`, a UTF-8 character) gives the same message as the whole stream."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from ctxview.proxy import protocols
from ctxview.proxy.answers import Assembler


def _ev(name: str, data: dict) -> bytes:  # type: ignore[type-arg]
    return f"event: {name}\r\ndata: {json.dumps(data, ensure_ascii=False)}\r\n\r\n".encode()


STREAM = b"".join([
    _ev("message_start", {"type": "message_start", "message": {"id": "m", "content": [],
                                                                "usage": {"input_tokens": 5}}}),
    b": a comment\n\n",
    _ev("content_block_start", {"type": "content_block_start", "index": 0,
                                "content_block": {"type": "thinking", "thinking": ""}}),
    _ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                "delta": {"type": "thinking_delta", "thinking": "héllo ✓"}}),
    _ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                "delta": {"type": "signature_delta", "signature": "sig"}}),
    _ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
    _ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                          "usage": {"output_tokens": 3}}),
    _ev("message_stop", {"type": "message_stop"}),
])  # fmt: skip

WHOLE = {
    "id": "m",
    "usage": {"input_tokens": 5, "output_tokens": 3},
    "stop_reason": "end_turn",
    "content": [{"type": "thinking", "thinking": "héllo ✓", "signature": "sig"}],
}


@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_any_split_gives_the_same_message(cuts: list[int]) -> None:
    a = Assembler(protocols.ANTHROPIC, "text/event-stream; charset=utf-8")
    points = [0, *sorted(cuts), len(STREAM)]
    for i, j in itertools.pairwise(points):
        a.feed(STREAM[i:j])
    answer = a.finish()
    assert answer.complete and answer.bad_events == 0
    assert answer.body == WHOLE


def test_a_stream_without_its_end_is_not_complete() -> None:
    a = Assembler(protocols.ANTHROPIC, "text/event-stream")
    a.feed(STREAM[: STREAM.index(b"event: message_delta")])
    answer = a.finish()
    assert not answer.complete
    assert answer.body["content"][0]["thinking"] == "héllo ✓"
