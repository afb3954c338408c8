"""The session a request belongs to: the one its client names, else one keyed by its
conversation. Claude Code names its session (the `X-Claude-Code-Session-Id` header, and
`session_id` in `metadata.user_id`), so its requests join `cc-<id>` beside the hooks and the
import; Codex names its own (`session-id`, its rollout's id), `cx-<id>`; any other client's
request is `px-<hash>` of what opens its conversation (the system prompt and the first user
message), which every later request of that conversation repeats. Pure."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from ctxview.proxy import protocols

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_LEGACY_USER_ID = re.compile(r"_session_([A-Za-z0-9-]{8,64})$")


def _valid(value: Any) -> str | None:
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def _header(headers: dict[str, str], name: str) -> str | None:
    return _valid(headers.get(name))


def claude_code_session(headers: dict[str, str], body: Any) -> str | None:
    sid = _header(headers, "x-claude-code-session-id")
    if sid:
        return sid
    meta = body.get("metadata") if isinstance(body, dict) else None
    user_id = meta.get("user_id") if isinstance(meta, dict) else None
    if not isinstance(user_id, str):
        return None
    try:
        parsed = json.loads(user_id)
    except ValueError:
        m = _LEGACY_USER_ID.search(user_id)  # 1.x-2.0: user_<hash>_account_<uuid>_session_<uuid>
        return m.group(1) if m else None
    return _valid(parsed.get("session_id")) if isinstance(parsed, dict) else None


def codex_session(headers: dict[str, str]) -> str | None:
    agent = (headers.get("user-agent", "") + " " + headers.get("originator", "")).lower()
    if "codex" not in agent:
        return None
    return _header(headers, "session-id") or _header(headers, "session_id")


def stored_conversation(protocol: str, body: Any) -> str | None:
    """The id of the conversation a Responses request continues upstream (`conversation`, a
    string or `{"id": …}`), or None."""
    if protocol != protocols.RESPONSES or not isinstance(body, dict):
        return None
    conv = body.get("conversation")
    return _valid(conv.get("id") if isinstance(conv, dict) else conv)


def continues(protocol: str, body: Any) -> str | None:
    """The response a Responses request continues (`previous_response_id`), or None."""
    if protocol != protocols.RESPONSES or not isinstance(body, dict):
        return None
    return _valid(body.get("previous_response_id"))


def held_upstream(protocol: str, body: Any) -> bool:
    """Whether the request's conversation is kept by the upstream, the request carrying only
    its new items (so what it carries is not the whole conversation)."""
    return protocols.held_upstream(protocol, body)


def _px(*parts: str) -> str:
    return "px-" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def session_key(protocol: str, headers: dict[str, str], body: Any,
                chains: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """`headers` with lower-case names; `chains` the sessions of the responses seen so far."""
    sid = claude_code_session(headers, body)
    if sid:
        return f"cc-{sid}"
    sid = codex_session(headers)
    if sid:
        return f"cx-{sid}"
    conv = stored_conversation(protocol, body)
    if conv:
        return _px("conversation", conv)
    prev = continues(protocol, body)
    if prev:
        return (chains or {}).get(prev) or _px("response", prev)
    return "px-" + conversation_hash(protocol, body)


def answer_id(protocol: str, answer: Any) -> str | None:
    """The id a Responses answer gives itself (what a later `previous_response_id` names)."""
    if protocol != protocols.RESPONSES or not isinstance(answer, dict):
        return None
    return _valid(answer.get("id"))


def conversation_hash(protocol: str, body: Any) -> str:
    parts = protocols.split(protocol, body)
    if parts is None:
        return "unparsed"
    opening: list[Any] = [protocol, parts.system]
    for m in _entries(protocol, body, parts):
        role = m.get("role")
        if role in ("system", "developer") and protocol == protocols.CHAT:
            opening.append(m)
        elif role == "user":
            opening.append(m)
            break
    # json.dumps' text, hashed a piece at a time: a 10 MB opening message made whole as text
    # and as UTF-8 was two more copies of it in the recorder.
    h = hashlib.sha256()
    for piece in _ENCODER.iterencode(opening):
        sha256_update(h, piece)
    return h.hexdigest()[:16]


_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
SLICE = 1 << 20


def sha256_update(h: Any, text: str) -> None:
    """`h` given `text` as UTF-8 (surrogates passed), a slice at a time (no whole copy)."""
    for i in range(0, len(text), SLICE):
        h.update(text[i : i + SLICE].encode("utf-8", "surrogatepass"))


def _entries(protocol: str, body: Any, parts: protocols.Parts) -> list[dict[str, Any]]:
    """The conversation's entries; a Responses `input` given as a string (the SDK's short
    form, a user message) as that message, in the form a client resends it."""
    text = body.get("input") if protocol == protocols.RESPONSES else None
    return [{"role": "user", "content": text}] if isinstance(text, str) else parts.messages


def title(protocol: str, body: Any) -> str:
    """A proxied session's title: the first line of its first user text that is not a
    reminder the client added (`<system-reminder>` and the like)."""
    parts = protocols.split(protocol, body)
    for m in _entries(protocol, body, parts) if parts else []:
        if m.get("role") != "user":
            continue
        c = m.get("content")
        texts = [c] if isinstance(c, str) else [
            b.get("text") for b in c or [] if isinstance(b, dict)]  # fmt: skip
        for t in texts:
            if isinstance(t, str) and t.strip() and not t.lstrip().startswith("<"):
                return t.strip().splitlines()[0][:120]
    return ""
