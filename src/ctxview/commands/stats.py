"""`ctxview stats [--session ID] [--json]`: what context hygiene saved, per session and in total."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from ctxview.commands.common import open_reader
from ctxview.commands.errors import CliError
from ctxview.context.request_cost import SessionCost, load_prices, session_cost
from ctxview.report.stats import CHARS_PER_TOKEN, SessionStats, all_stats, est_tokens
from ctxview.rules.config import Config, ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", help="one session (id or unique prefix); default: all")
    parser.add_argument(
        "--json", action="store_true", help="a JSON object per session, and the total"
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config value for the replay, e.g. elide.threshold_chars=60000 "
                        "(JSON value; repeatable)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    reader = await open_reader(args)
    try:
        rows = (
            [await reader.resolve_session(args.session)]
            if args.session
            else await reader.sessions()
        )
        overrides = _overrides(args.set)
        per, total = await all_stats(reader, rows, overrides)
        priced = await _proxied(reader, [s.id for s in per], Config(overrides))
    finally:
        await reader.close()
    if args.json:
        sessions = [{**s.as_json(), **({"proxied": priced[s.id].as_json()} if s.id in priced
                     else {})} for s in per]  # fmt: skip
        print(json.dumps({"sessions": sessions, "total": total.as_json()}, indent=2))
        return 0
    if not per:
        print("No sessions in the store yet.")
        return 0
    print(f"{'SESSION':44} {'SOURCE':11} {'RESULTS':>7} {'COMPACT':>7} {'SEEN':>10} "
          f"{'3.0.0':>10} {'SAVED':>10} {'SAVED%':>6}")  # fmt: skip
    for s in per:
        print(_row(s.id[:44], s))
    print(_row("total", total))
    print()
    _explain(total, len(per))
    print()
    _resent(per, total)
    if priced:
        print()
        _print_proxied(priced)
    return 0


async def _proxied(reader: Any, ids: list[str], config: Config) -> dict[str, SessionCost]:
    """The sessions with proxied requests, priced (`context/request_cost.py`)."""
    from ctxview.commands import proxied

    have = {sid for sid, _, _ in await reader.proxy_sessions()}
    table = load_prices()
    out = {}
    for sid in ids:
        if sid in have:
            _, sent, texts = await proxied.load(reader, sid)
            out[sid] = session_cost(sent, texts, table, config)
    return out


def _print_proxied(priced: dict[str, SessionCost]) -> None:
    """Cost per session by the recorded usage; for an elided one, the replays with and without."""
    date = next(iter(priced.values())).prices_date
    print(f"Proxied requests, priced by their own usage (prices of {date}); E/NONE: the same "
          "requests replayed with elision and without it, priced the same way.")  # fmt: skip
    print(f"{'SESSION':44} {'REQS':>5} {'COST $':>10} {'$/REQ':>8} {'WITH E $':>10} "
          f"{'WITHOUT $':>10} {'E/NONE':>6} {'BREAKS':>7}")  # fmt: skip
    for sid, c in priced.items():
        w, wo = c.with_elision, c.without_elision
        per = c.total / max(c.requests - c.unpriced, 1)
        print(f"{sid[:44]:44} {c.requests:5} {c.total:10.4f} {per:8.4f} {w.cost:10.4f} "
              f"{wo.cost:10.4f} {_ratio(w.cost, wo.cost):>6} {w.breaks:>3}/{wo.breaks:<3}")  # fmt: skip


def _overrides(pairs: list[str]) -> dict[str, Any]:
    """`--set key=value` pairs, each value JSON (a bare word is taken as a string)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--set takes KEY=VALUE, not {pair!r}.")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    try:
        Config(out)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    return out


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _row(name: str, s: SessionStats) -> str:
    return (f"{name:44} {s.source:11} {s.results:7} {s.compactions:7} {s.chars_seen:10} "
            f"{s.chars_hygiene:10} {s.chars_saved:10} {_pct(s.chars_saved, s.chars_seen):>6}")  # fmt: skip


def _explain(t: SessionStats, n: int) -> None:
    what = "this session" if n == 1 else f"these {n} sessions"
    print(f"Across {what}: {t.results} results. The agent got {t.chars_seen:,} characters of "
          f"tool results; under 3.0.0 it would have got {t.chars_hygiene:,} "
          f"(saved {t.chars_saved:,}, {_pct(t.chars_saved, t.chars_seen)}).")  # fmt: skip
    print(
        f"  unchanged stubs  {t.stubs_unchanged:6} results  saved {t.saved['unchanged']:>12,} chars"
    )
    print(f"  same-result stubs{t.stubs_same:6} results  saved {t.saved['same']:>12,} chars")
    print(f"  caps             {t.capped:6} results  saved {t.saved['cap']:>12,} chars")
    print(f"  other (ids, brackets, diffs instead of tool wording)  {t.saved['other']:>12,} chars")
    print(f"Estimated tokens (characters / {CHARS_PER_TOKEN}, an estimate, not a tokenizer): "
          f"seen {est_tokens(t.chars_seen):,}, 3.0.0 {est_tokens(t.chars_hygiene):,}, "
          f"saved {est_tokens(t.chars_saved):,}.")  # fmt: skip
    u = t.usage
    if t.usage_messages:
        print(f"Usage from the transcripts ({t.usage_messages} model calls): input "
              f"{u['input_tokens']:,}, output {u['output_tokens']:,}, cache reads "
              f"{u['cache_read_tokens']:,}, cache writes {u['cache_write_tokens']:,} tokens.")  # fmt: skip


def _ratio(part: float, whole: float) -> str:
    return f"×{part / whole:.2f}" if whole else "-"


def _resent_row(name: str, s: SessionStats) -> str:
    a = s.arms
    breaks = f"{a['hygiene'].prefix_breaks}/{a['elided'].prefix_breaks}"
    return (f"{name:36} {s.requests:5} {a['none'].sent_chars:13,} {a['hygiene'].sent_chars:13,} "
            f"{a['elided'].sent_chars:13,} {_ratio(a['elided'].sent_chars, a['hygiene'].sent_chars):>6} "
            f"{breaks:>7} {round(s.bills['hygiene']):12,} {round(s.bills['elided']):12,} "
            f"{_ratio(s.bills['elided'], s.bills['hygiene']):>6}")  # fmt: skip


def _resent(per: list[SessionStats], t: SessionStats) -> None:
    """What every request re-sends: the context as sent, with no measure, 3.0.0, and elision."""
    print("What is re-sent: each request sends its whole context again; summed over all requests "
          "(characters), with no measure, with 3.0.0, and with 3.0.0 plus elision.")  # fmt: skip
    print(f"{'SESSION':36} {'REQS':>5} {'SENT NONE':>13} {'SENT 3.0.0':>13} {'SENT ELIDED':>13} "
          f"{'E/3.0':>6} {'BREAKS':>7} {'BILL 3.0.0':>12} {'BILL ELIDED':>12} {'E/3.0':>6}")  # fmt: skip
    for s in per:
        print(_resent_row(s.id[:36], s))
    print(_resent_row("total", t))
    a = t.arms
    none, hyg, eli = a["none"], a["hygiene"], a["elided"]
    print(f"Across {t.requests:,} requests the context re-sent {none.sent_chars:,} characters "
          f"(~{none.sent_tokens:,} tokens) with no measure, {hyg.sent_chars:,} with 3.0.0 "
          f"({_pct(hyg.sent_chars - none.sent_chars, none.sent_chars)}), and {eli.sent_chars:,} "
          f"with 3.0.0 plus elision ({_pct(eli.sent_chars - hyg.sent_chars, hyg.sent_chars)} "
          f"against 3.0.0).")  # fmt: skip
    print(f"Breaks of the cached prefix (BREAKS, 3.0.0/elided): {hyg.compactions} compactions; "
          f"elision adds {eli.strides} strides, which sent {eli.elided_results:,} results as "
          f"stubs.")  # fmt: skip
    print(f"Estimated bill, in uncached input tokens (input + 1.25 × cache write + 0.1 × cache "
          f"read, a request reading from the cache what it shares with the one before): no "
          f"measure {round(t.bills['none']):,}, 3.0.0 {round(t.bills['hygiene']):,}, elided "
          f"{round(t.bills['elided']):,} ({_ratio(t.bills['elided'], t.bills['hygiene'])} of "
          f"3.0.0).")  # fmt: skip
    if t.usage_messages:
        print(f"The same bill from the transcripts' own usage: {round(t.bill_usage):,} (it also "
              f"counts the system prompt and tools, which the estimate leaves out).")  # fmt: skip
    if t.recorded_requests:
        print(
            f"No measure (SENT NONE) is Claude Code's own record of the {t.recorded_requests:,} "
            "requests it sent, where the transcript has one (2.1.3xx), not a replay."
        )
    if t.cost_usd:
        print(f"The transcripts' own cost (Claude Code's cost-state): ${t.cost_usd:,.4f}, beside "
              f"the estimated bills above.")  # fmt: skip
