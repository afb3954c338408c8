"""Gemini CLI's compression as its `BeforeModel` hook sees it: the request's text messages
(`llm_request.messages`, Gemini's own translation: each content's text parts joined, function
calls and responses left out).

0.61 fires `PreCompress` "auto" before every turn, whether it then compresses or not, and its
hook can change nothing (it is installed for "manual" only, which says which kind the next
compression was). What says a compression happened is a request holding Gemini's summary: a
user message (the session's context, then the `<state_snapshot>`) answered by the fixed model
message its compression service writes (`ACK`, `importers.gemini.COMPRESSED_ACK`), a summary
not recorded before. Only that pair counts, and only once: the requests after it still hold
it, a sub-agent's requests (in the same session, for Gemini's hooks) hold none, nor does a
rewind add one. So the hook needs no earlier request, and the ones without `ACK` need not reach
the engine at all (`install.py` runs the hook client only for them). The files-read table
goes after the summary, in that message, in this request and every later one that still holds
it (the hook's change is to the request only: Gemini's history, and its chat file, keep the
summary alone).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ctxview.importers.gemini import COMPRESSED_ACK

Message = tuple[str, str]  # (role, text)
SNAPSHOT = "<state_snapshot>"
CONTEXT_END = "</session_context>"
ACK = ("model", COMPRESSED_ACK)
# The bytes of `ACK`'s text as the hook input's JSON holds it: a request without them holds no
# summary (the shell's test in the BeforeModel hook's command, before any Python starts).
ACK_JSON = json.dumps(COMPRESSED_ACK)


def messages_of(request: Any) -> list[Message]:
    """The (role, text) of each message of a BeforeModel hook's `llm_request`."""
    raw = request.get("messages") if isinstance(request, dict) else None
    out: list[Message] = []
    for m in raw if isinstance(raw, list) else []:
        if isinstance(m, dict):
            content = m.get("content")
            out.append((str(m.get("role") or ""), content if isinstance(content, str) else ""))
    return out


def summary_at(now: list[Message]) -> int | None:
    """Where Gemini's summary is in `now`: the first user message answered by `ACK`."""
    for i in range(len(now) - 1):
        if now[i][0] == "user" and now[i + 1] == ACK:
            return i
    return None


def summary_in(message: str) -> str:
    """The summary in its message, which begins with the session's context: from Gemini's
    `<state_snapshot>` (its compression asks for one, and looks for it to find an earlier
    summary), else past the session's context, else the whole text."""
    start = message.find(SNAPSHOT)
    if start < 0:
        end = message.find(CONTEXT_END)
        start = 0 if end < 0 else end + len(CONTEXT_END)
    return message[start:].strip()


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
