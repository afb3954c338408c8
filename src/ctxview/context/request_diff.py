"""What changed from one recorded request of a session to the next, and why the prompt cache
broke where it did. Pure functions over request bodies (Anthropic Messages, OpenAI Responses
and Chat Completions alike: the conversation's key is the protocol's own).

The prompt cache serves the longest prefix the new request shares with what an earlier one
wrote, for as long as the cache's lifetime (5 minutes, an hour where a breakpoint asks for
`ttl: 1h`). So a request reads all of the previous one unless: the lifetime passed since it
(`ttl`), the system prompt or the tools changed (`system`, `tools`), a message inside the prefix
changed: newly elided (`stride`, the one sanctioned break of `--elide`) or otherwise edited
(`edit`, naming the block), or the conversation was replaced (`compaction`: its first message
differs, or it shrank)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ctxview.context.request_elide import message_is_elided
from ctxview.context.requests import BILLING_PREFIX

TTL_SECONDS = 300.0
TTL_1H_SECONDS = 3600.0
CONVERSATION_KEYS = ("messages", "input")  # Messages and Chat; Responses
_SYSTEM = ("system", "instructions")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def conversation(body: Any) -> list[Any]:
    if not isinstance(body, dict):
        return []
    for key in CONVERSATION_KEYS:
        value = body.get(key)
        if isinstance(value, list):
            return value
    return []


def system_of(body: Any) -> Any:
    if not isinstance(body, dict):
        return None
    return next((body[k] for k in _SYSTEM if k in body), None)


def _strip(value: Any) -> Any:
    """Cache marks left out: moving a breakpoint is not a change of content."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _prompt(system: Any) -> Any:
    """The system prompt as compared: no cache marks, and without Claude Code's billing-header
    block (`x-anthropic-billing-header: cc_version=…`), whose suffix is a hash Claude Code makes
    of the conversation: it changes when the conversation is replaced (a compaction), which is
    not the system prompt changing."""
    if isinstance(system, list):
        system = [b for b in system if not (isinstance(b, dict) and isinstance(b.get("text"), str)
                                            and b["text"].startswith(BILLING_PREFIX))]  # fmt: skip
    return _strip(system)


def lifetime(body: Any) -> float:
    """The cache lifetime the request's breakpoints ask for: an hour if any says `ttl: 1h`."""
    return TTL_1H_SECONDS if '"ttl":"1h"' in _dumps(body) else TTL_SECONDS


@dataclass
class Change:
    """Request `body` against the session's previous request."""

    reason: str  # first | kept | ttl | system | tools | stride | edit | compaction
    detail: str  # one sentence
    first_diff: int | None  # the first message that differs (None: the prefix is whole)
    kept: int  # leading messages the two share
    added: int  # messages after the shared prefix
    removed: int  # messages of the previous request not in this one's prefix
    gap_seconds: float | None
    block: int | None = None  # for an edit: the first block of the message that differs

    @property
    def broke(self) -> bool:
        """Whether the cache could not serve all of the previous request."""
        return self.reason not in ("first", "kept")


def _first_block(a: Any, b: Any) -> int | None:
    ca = a.get("content") if isinstance(a, dict) else None
    cb = b.get("content") if isinstance(b, dict) else None
    if not isinstance(ca, list) or not isinstance(cb, list):
        return None
    for i, (x, y) in enumerate(zip(ca, cb, strict=False)):
        if _strip(x) != _strip(y):
            return i
    return min(len(ca), len(cb))


def _block_kind(message: Any, block: int | None) -> str:
    c = message.get("content") if isinstance(message, dict) else None
    if block is not None and isinstance(c, list) and block < len(c) and isinstance(c[block], dict):
        return str(c[block].get("type") or "block")
    return "content"


def diff(prev: Any, body: Any, prev_ts: float | None = None, ts: float | None = None) -> Change:
    """How `body` differs from `prev` (None: the session's first request)."""
    new = conversation(body)
    if prev is None:
        return Change("first", f"The session's first request: {len(new)} messages, all written "
                      "to the cache.", None, 0, len(new), 0, None)  # fmt: skip
    old = conversation(prev)
    gap = ts - prev_ts if ts is not None and prev_ts is not None else None
    kept = 0
    for a, b in zip(old, new, strict=False):
        if _strip(a) != _strip(b):
            break
        kept += 1
    first = None if kept == len(old) else kept
    added, removed = len(new) - kept, len(old) - kept

    def change(reason: str, detail: str, block: int | None = None) -> Change:
        return Change(reason, detail, first, kept, added, removed, gap, block)

    if _prompt(system_of(prev)) != _prompt(system_of(body)):
        return change("system", "The system prompt changed: nothing of the previous request "
                      "could be read from the cache.")  # fmt: skip
    if _strip(prev.get("tools") if isinstance(prev, dict) else None) != _strip(
        body.get("tools") if isinstance(body, dict) else None
    ):
        return change("tools", "The tools changed: nothing of the previous request could be "
                      "read from the cache.")  # fmt: skip
    if first is not None:
        if (
            first == 0
            or first >= len(new)
            or (len(new) < len(old) and not message_is_elided(new[first]))
        ):
            return change("compaction", f"The conversation was replaced from message {first} "
                          f"({len(old)} messages before, {len(new)} now).")  # fmt: skip
        if first < len(new) and message_is_elided(new[first]) and not message_is_elided(old[first]):
            return change("stride", f"An elision stride: message {first} onwards left as stubs, "
                          f"the cache rewritten from there.")  # fmt: skip
        block = _first_block(old[first], new[first]) if first < len(new) else None
        role = new[first].get("role") if first < len(new) and isinstance(new[first], dict) else "?"
        what = _block_kind(old[first], block)
        return change("edit", f"Message {first} ({role}) was edited in the prefix, block "
                      f"{block if block is not None else '-'} ({what}): the cache breaks there.",
                      block)  # fmt: skip
    life = lifetime(prev)
    if gap is not None and gap > life:
        return change("ttl", f"{gap:,.0f} s since the previous request, past the cache's "
                      f"{life:,.0f} s lifetime: the whole prefix written again.")  # fmt: skip
    return change("kept", f"The previous request's {kept} messages kept whole; {added} added.")


def diffs(bodies: list[Any], times: list[float | None]) -> list[Change]:
    """Each request against the one before it."""
    out = []
    for i, body in enumerate(bodies):
        prev = bodies[i - 1] if i else None
        out.append(diff(prev, body, times[i - 1] if i else None, times[i]))
    return out
