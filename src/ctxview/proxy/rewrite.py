"""The changes the proxy makes to a request before it forwards it, only when asked: `--elide`
(`context/request_elide.py`) on Anthropic Messages, OpenAI Responses and Chat Completions
requests, and `--cache auto` (`cache_auto.py`) on Anthropic Messages only (OpenAI caches a
request's prefix itself, with no marks to set). A body that is not JSON, is content-encoded,
or comes out unchanged is forwarded as the very bytes that came. No I/O: the elided texts go
back to the caller, which has the recorder store them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ctxview.context.request_elide import Elider
from ctxview.proxy import cache_auto, keying, protocols
from ctxview.rules.config import Config


@dataclass
class Rewritten:
    body: bytes  # what is forwarded
    changed: bool = False
    texts: dict[int, str] = field(default_factory=dict)  # elided: id -> text, to be stored
    session: str | None = None
    note: str | None = None


# The protocols `--elide` rewrites: each names its conversation in `protocols.LAYOUTS`.
ELIDED = (protocols.ANTHROPIC, protocols.RESPONSES, protocols.CHAT)


HELD_UPSTREAM = "Not elided: the upstream keeps its conversation; only its new items are here."


class Rewriter:
    def __init__(self, *, elide: bool = False, cache: str | None = None,
                 config: Config | None = None) -> None:  # fmt: skip
        self.elide = elide
        self.cache = cache
        self.config = config or Config()
        self.eliders: dict[str, Elider] = {}  # session -> its elision state

    @property
    def active(self) -> bool:
        return self.elide or self.cache == "auto"

    def applies(self, protocol: str) -> bool:
        return (self.elide and protocol in ELIDED) or (
            self.cache == "auto" and protocol == protocols.ANTHROPIC
        )

    def rewrite(self, protocol: str, headers: list[tuple[str, str]], raw: bytes) -> Rewritten:
        lower = {k.lower(): v for k, v in headers}
        if lower.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
            return Rewritten(raw, note="The body is content-encoded; forwarded unchanged.")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return Rewritten(raw)
        parts = protocols.split(protocol, body)
        if parts is None or not parts.has_messages:
            return Rewritten(raw)
        if keying.held_upstream(protocol, body):
            # Only the new items are here, the conversation is the upstream's: its size is not
            # this input's, and the oldest items here are the live window's newest.
            return Rewritten(raw, note=HELD_UPSTREAM)
        session = keying.session_key(protocol, lower, body)
        out = Rewritten(raw, session=session)
        new: Any = body
        if self.elide and protocol in ELIDED:
            elider = self.eliders.setdefault(session, Elider(self.config))
            done = elider.apply(parts.messages, parts.tools)
            if done.texts:
                # The body's own key order kept: only the messages change.
                mkey = protocols.LAYOUTS[protocol][0]
                new = {k: done.messages if k == mkey else v for k, v in body.items()}
                out.texts = done.texts
        if self.cache == "auto" and protocol == protocols.ANTHROPIC:
            new = cache_auto.auto(new)
        if new is not body:
            out.body = json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode()
            out.changed = True
        return out
