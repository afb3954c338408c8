"""What hygiene saved, per session: the figures `ctxview stats` prints, from the store's events.

Per result, the base is what the agent really got (`seen_chars`, known for imported sessions),
else the stored text; what 3.0.0 shows is `shown_chars`. The difference is put down to the measure
that made it: an unchanged stub, a same-result stub, a cap, or the rest (`other`: ids, brackets,
numbered lines and diffs in place of the tool's own wording; it can be negative). The measures add
up to `chars_seen - chars_hygiene`. Tokens are estimated as characters / 4; the token figures from
the usage records are the model's own counts. `SessionStats` is a dataclass so later measures
(elision) can add fields without changing the command.

What is re-sent (issue 5): every request sends the whole context again, so the same events are
also replayed as the context as sent (`src/ctxview/context/state.py`) in three arms, `none` (what the agent
got), `hygiene` (3.0.0) and `elided` (3.0.0 plus elision at the session's `elide.*` values), each
summing its context's size over all requests, its prefix breaks (compactions, strides), and an
estimated bill from a prompt-cache model (`cost.<provider>.*`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ctxview.context.requests import rebuild_stored, sent_figures
from ctxview.context.state import ARMS, ArmFigures, arm_state, figures
from ctxview.rules.as_sent import Usage, bill, provider_of, rates
from ctxview.rules.config import Config, ConfigError
from ctxview.store import Reader
from ctxview.store.records import SessionRow

CHARS_PER_TOKEN = 4
MEASURES = ("unchanged", "same", "cap", "other")
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_PAGE = 5000


def est_tokens(chars: int) -> int:
    return round(chars / CHARS_PER_TOKEN)


@dataclass
class SessionStats:
    id: str
    source: str
    title: str = ""
    parent_session: str | None = None
    results: int = 0
    compactions: int = 0
    messages: int = 0
    chars_seen: int = 0  # what the agent got (the stored text where the source did not say)
    chars_hygiene: int = 0  # what 3.0.0 shows
    chars_stored: int = 0
    stubs_unchanged: int = 0
    stubs_same: int = 0
    capped: int = 0
    saved: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEASURES, 0))
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    usage_messages: int = 0  # assistant messages that carried usage
    # The context as sent, per arm (none, hygiene, elided), and its estimated bill in units of
    # one uncached input token at the session's provider's rates.
    arms: dict[str, ArmFigures] = field(default_factory=lambda: {a: ArmFigures() for a in ARMS})
    bills: dict[str, float] = field(default_factory=lambda: dict.fromkeys(ARMS, 0.0))
    bill_usage: float = 0.0  # the same bill from the model's own usage counts
    # Claude Code's own records (schema 5): the requests it sent, which then are the "none"
    # arm, and its own cost (cost-state's totalCostUSD) beside the estimate.
    recorded_requests: int = 0
    cost_usd: float = 0.0

    @property
    def requests(self) -> int:
        return self.arms["hygiene"].requests

    def sent_chars(self, arm: str) -> int:
        return self.arms[arm].sent_chars

    @property
    def chars_saved(self) -> int:
        return self.chars_seen - self.chars_hygiene

    def add(self, other: SessionStats) -> None:
        """Fold another session's figures into these (the total)."""
        for name in ("results", "compactions", "messages", "chars_seen", "chars_hygiene",
                     "chars_stored", "stubs_unchanged", "stubs_same", "capped",
                     "usage_messages", "recorded_requests", "cost_usd"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k in MEASURES:
            self.saved[k] += other.saved[k]
        for k in USAGE_KEYS:
            self.usage[k] += other.usage[k]
        for arm in ARMS:
            mine, theirs = self.arms[arm], other.arms[arm]
            for name in ("requests", "sent_chars", "cache_read_chars", "cache_write_chars",
                         "prefix_breaks", "compactions", "strides", "elided_results"):  # fmt: skip
                setattr(mine, name, getattr(mine, name) + getattr(theirs, name))
            mine.peak_chars = max(mine.peak_chars, theirs.peak_chars)
            self.bills[arm] += other.bills[arm]
        self.bill_usage += other.bill_usage

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("arms"), out.pop("bills")
        out["requests"] = self.requests
        for arm in ARMS:
            out[f"sent_chars_{arm}"] = self.arms[arm].sent_chars
            out[f"sent_tokens_{arm}"] = self.arms[arm].sent_tokens
            out[f"bill_{arm}"] = round(self.bills[arm])
        out["prefix_breaks"] = self.arms["elided"].prefix_breaks
        out["prefix_breaks_hygiene"] = self.arms["hygiene"].prefix_breaks
        out["bill_usage"] = round(self.bill_usage)
        out["arms"] = {arm: asdict(self.arms[arm]) for arm in ARMS}
        out["chars_saved"] = self.chars_saved
        out["tokens_est_seen"] = est_tokens(self.chars_seen)
        out["tokens_est_hygiene"] = est_tokens(self.chars_hygiene)
        out["tokens_est_saved"] = est_tokens(self.chars_saved)
        return out


async def session_stats(
    reader: Reader, row: SessionRow, overrides: dict[str, Any] | None = None
) -> SessionStats:
    """One session's figures, reading its events a page at a time (no bodies). `overrides`
    (config keys, e.g. `elide.threshold_chars`) apply over the session's own config."""
    st = SessionStats(row.id, row.source, row.title, row.parent_session)
    try:
        config = Config({**row.overrides, **(overrides or {})})
    except ConfigError:
        config = Config(overrides)
    states = {arm: arm_state(config, arm) for arm in ARMS}
    price = rates(config, provider_of(row.source))
    after = 0
    while True:
        page = await reader.events(row.id, after=after, limit=_PAGE)
        if not page:
            break
        after = page[-1].seq
        for ev in page:
            for state in states.values():
                state.feed(ev)
            if ev.kind == "compaction":
                st.compactions += 1
            elif ev.kind in ("message", "usage"):
                st.messages += ev.kind == "message"
                usage = _usage(ev.data)
                if usage:
                    st.usage_messages += 1
                    for k in USAGE_KEYS:
                        value = usage.get(k)
                        st.usage[k] += value if isinstance(value, int) else 0
                    if (u := Usage.from_dict(usage)) is not None:
                        st.bill_usage += bill(u.input_tokens, u.cache_write_tokens,
                                              u.cache_read_tokens, price)  # fmt: skip
            elif ev.kind == "result" and ev.rid is not None:
                st.results += 1
                shown = ev.shown_chars or 0
                stored = ev.stored_chars or 0
                base = ev.seen_chars if ev.seen_chars is not None else stored
                st.chars_seen += base
                st.chars_hygiene += shown
                st.chars_stored += stored
                if ev.rkind == "unchanged":
                    measure = "unchanged"
                    st.stubs_unchanged += 1
                elif ev.rkind == "same":
                    measure = "same"
                    st.stubs_same += 1
                elif ev.capped:
                    measure = "cap"
                    st.capped += 1
                else:
                    measure = "other"
                st.saved[measure] += base - shown
    for arm, state in states.items():
        st.arms[arm] = figures(state)
        st.bills[arm] = st.arms[arm].bill(price)
    recorded = rebuild_stored(await reader.api_request_rows(row.id))
    if recorded:
        st.recorded_requests = len(recorded)
        none = st.arms["none"]
        for name, value in sent_figures(recorded).items():
            setattr(none, name, value)
        st.bills["none"] = none.bill(price)
    cost = await reader.api_cost(row.id)
    if cost and isinstance(cost.get("totalCostUSD"), int | float):
        st.cost_usd = float(cost["totalCostUSD"])
    return st


def _usage(data: str | None) -> dict[str, Any] | None:
    if not data or '"usage"' not in data:
        return None
    try:
        usage = json.loads(data).get("usage")
    except (ValueError, AttributeError):
        return None
    return usage if isinstance(usage, dict) else None


async def all_stats(
    reader: Reader, rows: list[SessionRow], overrides: dict[str, Any] | None = None
) -> tuple[list[SessionStats], SessionStats]:
    """Each session's figures and their total."""
    per = [await session_stats(reader, r, overrides) for r in rows]
    total = SessionStats("total", "")
    for st in per:
        total.add(st)
    return per, total
