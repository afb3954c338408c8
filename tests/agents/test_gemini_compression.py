"""What counts as a Gemini compression in its BeforeModel hook's messages (agents/gemini/
compression.py): the history replaced by a summary that Gemini's fixed answer follows, never a
request that does not extend the last one for another reason (a sub-agent's, a rewind)."""

from __future__ import annotations

from ctxview.agents.gemini.compression import ACK, digest, replaced_at, summary_in, with_table

CTX = "<session_context>the folder</session_context>"
BEFORE = [("user", CTX + "read it"), ("model", "reading"), ("user", "more")]


def test_a_summary_answered_by_gemini_is_a_compression() -> None:
    now = [("user", CTX + "<state_snapshot>s</state_snapshot>"), ACK, ("user", "Please continue.")]
    assert replaced_at(BEFORE, now) == 0
    assert summary_in(BEFORE, now, 0) == "<state_snapshot>s</state_snapshot>"
    messages = with_table(now, digest(now[0][1]), "## Files read before this summary")
    assert messages is not None
    assert messages[0]["content"] == now[0][1] + "\n\n## Files read before this summary"
    assert [m["content"] for m in messages[1:]] == [ACK[1], "Please continue."]


def test_other_histories_are_not() -> None:
    assert replaced_at(BEFORE, [*BEFORE, ("model", "done")]) is None  # it grew
    assert replaced_at(BEFORE, BEFORE[:2]) is None  # a rewind
    assert replaced_at(BEFORE, [("user", "a sub-agent's task"), ("model", "ok")]) is None
    assert with_table(BEFORE, digest("gone"), "table") is None
