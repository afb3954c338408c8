"""`--elide` across a compaction that rebuilds the conversation under the same first entry, as
Codex 0.169 does (its two developer messages stay first; what follows is the prompts and one
`compaction` item): the rebuilt conversation is a new one for the threshold, as a compaction
is in the engine (`context/state.py`) and as lean-ctx reads it (the threshold on the client's
own messages, which only grow between compactions). Pure: the rule code itself."""

from __future__ import annotations

import itertools
import json
from typing import Any

from test_proxy_elide_openai import responses_input

from ctxview.context import request_elide as re_
from ctxview.rules import elide as rules
from ctxview.rules.config import Config

CONFIG = Config({"elide.threshold_chars": 100_000, "elide.min_chars": 300})
TRIGGER = {"type": "compaction_trigger"}  # Codex 0.169's ask for a compaction (remote, v2)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _rebuilt(before: list[dict[str, Any]], turns: int) -> list[dict[str, Any]]:
    """What Codex sends after its compaction: its first messages and the prompt, the
    compaction item the API answered with, then `turns` new calls and their outputs."""
    grown = responses_input(turns + 100)[3 + 2 * 100 :]  # other calls than before
    head = [m for m in before if m.get("type") == "message" and m.get("role") != "assistant"]
    return [*head[:3], {"type": "compaction", "id": "cmp_1", "encrypted_content": "ENC"},
            *grown]  # fmt: skip


def test_a_compaction_under_the_same_first_entry_starts_the_threshold_afresh() -> None:
    e = re_.Elider(CONFIG)
    before = responses_input(40)
    assert re_.messages_size(before) > 100_000
    done = e.apply(before)
    assert done.crossed and done.boundary == rules.boundary(len(before), 8, 16)
    # The compaction request (the history and the trigger) is the same conversation, one item
    # longer: elided alike, so it reads the cache the previous request wrote.
    ask = e.apply([*before, TRIGGER])
    assert ask.crossed and _compact(ask.messages).startswith(_compact(done.messages)[:-1])
    # The rebuilt conversation grows past a stride's worth of items, still under the threshold:
    # sent as it came, as a conversation that never crossed.
    for turns in range(1, 13):
        after = _rebuilt(before, turns)
        assert after[0] == before[0] and re_.messages_size(after) < 100_000
        got = e.apply(after)
        assert not got.crossed and got.messages is after and not got.texts, turns
    assert rules.boundary(len(after), 8, 16) >= 16  # a stride it would have elided
    # Once its own messages pass the threshold it is elided again, at its own strides, and
    # stays across from there.
    crossed_at = None
    for turns in range(13, 60):
        after = _rebuilt(before, turns)
        got = e.apply(after)
        if crossed_at is None and got.crossed:
            crossed_at = turns
        assert got.crossed == (re_.messages_size(after) > 100_000 or crossed_at is not None)
        if got.crossed:
            assert got.boundary == rules.boundary(len(after), 8, 16)
            assert all(i < got.boundary for i, m in enumerate(got.messages)
                       if re_.message_is_elided(m))  # fmt: skip
    assert crossed_at is not None


def test_the_stubs_after_a_compaction_are_the_bytes_they_were_before_it() -> None:
    """A result kept across a compaction and elided on both sides is the same stub (a function
    of its text), and the rebuilt conversation's stubs name only texts it carries."""
    e = re_.Elider(CONFIG)
    before = responses_input(40)
    e.apply(before)
    after = [*before[:3], {"type": "compaction", "id": "cmp_1", "encrypted_content": "ENC"},
             *before[3:]]  # a compaction that kept every item (and one more)  # fmt: skip
    a, b = e.apply(before), e.apply(after)
    old = {call: t for m in a.messages for _, t, call in re_.results(m) if re_.stub_id(t)}
    new = {call: t for m in b.messages for _, t, call in re_.results(m) if re_.stub_id(t)}
    assert old and all(new[c] == t for c, t in old.items() if c in new)
    carried = {t for m in after for _, t, _ in re_.results(m)}
    assert set(b.texts.values()) <= carried


def test_a_shrunk_conversation_is_read_afresh_and_a_grown_one_stays_across() -> None:
    """The threshold reads each rebuilt conversation's own messages: one that shrank below it
    (the client dropped items) is sent whole; one still above it stays elided, and a request
    that only adds items never re-measures (it cannot have shrunk)."""
    e = re_.Elider(CONFIG)
    msgs = responses_input(40)
    assert e.apply(msgs).crossed
    dropped = msgs[:3] + msgs[-20:]
    assert re_.messages_size(dropped) < 100_000
    assert not e.apply(dropped).crossed
    still = msgs[:3] + msgs[-70:]
    assert re_.messages_size(still) > 100_000 and e.apply(still).crossed
    for a, b in itertools.pairwise([msgs[: 3 + 2 * t] for t in range(36, 41)]):
        assert e.apply(a).crossed and e.apply(b).crossed
