"""Why the prompt cache broke between two requests (context/request_diff.py), pure."""

from __future__ import annotations

from typing import Any

from ctxview.context import request_diff as rd
from ctxview.context.request_elide import Elider
from ctxview.rules.config import Config


def _body(messages: list[Any], system: str = "s") -> dict[str, Any]:
    return {"system": system, "tools": [{"name": "Read"}], "messages": messages}


M = [{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "text",
     "text": "b"}]}, {"role": "user", "content": [{"type": "text", "text": "c"}]}]  # fmt: skip


def test_each_reason() -> None:
    assert rd.diff(None, _body(M)).reason == "first"
    grown = _body([*M, {"role": "assistant", "content": "d"}])
    kept = rd.diff(_body(M), grown, 0.0, 10.0)
    assert (kept.reason, kept.kept, kept.added, kept.broke) == ("kept", 3, 1, False)
    assert rd.diff(_body(M), grown, 0.0, 301.0).reason == "ttl"
    hour = _body([{**M[0], "content": [{"type": "text", "text": "a",
                   "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}, *M[1:]])  # fmt: skip
    assert rd.diff(hour, grown, 0.0, 301.0).reason != "ttl"
    assert rd.diff(_body(M), _body(M, system="other")).reason == "system"
    edited = [M[0], {"role": "assistant", "content": [{"type": "text", "text": "B"}]}, M[2]]
    e = rd.diff(_body(M), _body(edited))
    assert (e.reason, e.first_diff, e.block) == ("edit", 1, 0) and "block 0 (text)" in e.detail
    assert rd.diff(_body(M), _body([{"role": "user", "content": "summary"}])).reason == \
        "compaction"  # fmt: skip
    # Moving a cache marker is not a change.
    marked = [*M[:2], {"role": "user", "content": [{"type": "text", "text": "c",
              "cache_control": {"type": "ephemeral"}}]}]  # fmt: skip
    assert rd.diff(_body(marked), _body(M)).reason == "kept"


def test_claude_codes_billing_header_is_not_the_system_prompt() -> None:
    """Claude Code's first system block is a billing header whose suffix it hashes from the
    conversation: after a compaction it differs, and the change is the compaction."""

    def system(suffix: str, prompt: str = "You are Claude Code.") -> list[dict[str, str]]:
        return [{"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.328.{suffix};"
                 " cc_entrypoint=sdk-cli;"}, {"type": "text", "text": prompt}]  # fmt: skip

    summary = [{"role": "user", "content": "This session is being continued: summary"}]
    c = rd.diff(_body(M, system("ccf")), _body(summary, system("281")))
    assert (c.reason, c.first_diff) == ("compaction", 0) and c.broke
    assert rd.diff(_body(M, system("ccf")), _body(M, system("281"))).reason == "kept"
    assert rd.diff(_body(M, system("ccf")), _body(M, system("ccf", "Other."))).reason == "system"


def test_an_elision_stride_is_named() -> None:
    cfg = Config({"elide.threshold_chars": 1000, "elide.min_chars": 100})
    msgs: list[Any] = [{"role": "user", "content": "go"}]
    for t in range(12):
        msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{t}",
                  "name": "Bash", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{t}",
                  "content": "x" * 500}]}]  # fmt: skip
    e = Elider(cfg)
    before = _body(e.apply(msgs[:23]).messages)  # 23 messages: boundary 0
    after = _body(e.apply(msgs[:25]).messages)  # 25: boundary 16
    c = rd.diff(before, after)
    assert (c.reason, c.first_diff) == ("stride", 2) and c.broke
