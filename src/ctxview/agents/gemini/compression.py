"""Gemini CLI's compression as its `BeforeModel` hook sees it: the request's text messages
(`llm_request.messages`, Gemini's own translation: each content's text parts joined, function
calls and responses left out).

0.61 fires `PreCompress` "auto" before every turn, whether it then compresses or not, and its
hook can change nothing (it is installed for "manual" only, which says which kind the next
compression was). What says a compression happened is the next request: its messages no longer
extend the last request's, because Gemini replaced the history with its summary (a user
message: the session's context, then the `<state_snapshot>`), its fixed answer to it (`ACK`,
the model message its compression service writes, `importers.gemini.COMPRESSED_ACK`) and what it kept. Both are required: a
sub-agent's request in the same session, or a rewind, does not extend the last one either. The files-read
table goes after the summary, in that message, in this request and every later one that still
holds it (the hook's change is to the request only: Gemini's history, and its chat file, keep
the summary alone).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ctxview.importers.gemini import COMPRESSED_ACK

Message = tuple[str, str]  # (role, text)
SNAPSHOT = "<state_snapshot>"
ACK = ("model", COMPRESSED_ACK)


def messages_of(request: Any) -> list[Message]:
    """The (role, text) of each message of a BeforeModel hook's `llm_request`."""
    raw = request.get("messages") if isinstance(request, dict) else None
    out: list[Message] = []
    for m in raw if isinstance(raw, list) else []:
        if isinstance(m, dict):
            content = m.get("content")
            out.append((str(m.get("role") or ""), content if isinstance(content, str) else ""))
    return out


def replaced_at(before: list[Message], now: list[Message]) -> int | None:
    """Where Gemini's summary is in `now`: the first message that does not extend `before`,
    answered by `ACK`; None when the history only grew, or changed otherwise."""
    for i, (old, new) in enumerate(zip(before, now, strict=False)):
        if old != new:
            return i if now[i + 1 : i + 2] == [ACK] else None
    return None


def summary_in(before: list[Message], now: list[Message], at: int) -> str:
    """The summary in the replaced message, which begins with the session's context as the old
    one did: from Gemini's `<state_snapshot>` (its compression asks for one, and looks for it to
    find an earlier summary), else past what the two have in common."""
    text = now[at][1]
    start = text.find(SNAPSHOT)
    if start < 0:
        old = before[at][1] if at < len(before) else ""
        pairs = zip(old, text, strict=False)
        start = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(old), len(text)))
    return text[start:].strip()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def with_table(messages: list[Message], holder: str, table: str) -> list[dict[str, str]] | None:
    """The request's messages with the table after the summary, in the message whose text's
    digest is `holder`; None when no message holds the summary any more."""
    out = [{"role": role, "content": text} for role, text in messages]
    for m in out:
        if digest(m["content"]) == holder:
            m["content"] = f"{m['content']}\n\n{table}"
            return out
    return None
