"""One result as the rules build it, before it is stored; and the hash that compares results."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ctxview.rules.lines import count_lines
from ctxview.store.records import Event


def sha256_text(text: str) -> str:
    """The hash a same-result comparison uses, in chunks so a 200 MB output is never copied whole."""
    h = hashlib.sha256()
    step = 1 << 20
    for i in range(0, len(text), step):
        h.update(text[i : i + step].encode("utf-8", errors="surrogatepass"))
    return h.hexdigest()


@dataclass
class Result:
    """One result as built by the rules, before it is stored."""

    rid: int
    tool: str
    shown: str  # the exact text the model is given
    stored: str  # the full text: before any cap; for a stub, the text it stands for
    rkind: str
    points_to: int | None = None
    capped: bool = False
    elided_lines: int | None = None
    path: str | None = None
    line_from: int | None = None
    line_to: int | None = None
    line_total: int | None = None
    sha: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def event(self, ts: float, call_ref: str | None, seen: int | None) -> Event:
        return Event(
            ts=ts, kind="result", tool=self.tool, call_ref=call_ref, rid=self.rid,
            rkind=self.rkind, points_to=self.points_to, capped=int(self.capped),
            elided_lines=self.elided_lines, path=self.path, line_from=self.line_from,
            line_to=self.line_to, line_total=self.line_total, sha=self.sha,
            shown_chars=len(self.shown), shown_lines=count_lines(self.shown),
            stored_chars=len(self.stored), stored_lines=count_lines(self.stored),
            seen_chars=seen, data=json.dumps(self.data) if self.data else None,
        )  # fmt: skip
