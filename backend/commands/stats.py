"""`ctxview stats [--session ID] [--json]`: what context hygiene saved, per session and in total."""

from __future__ import annotations

import argparse
import asyncio
import json

from ..stats import CHARS_PER_TOKEN, SessionStats, all_stats, est_tokens
from .common import open_reader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", help="one session (id or unique prefix); default: all")
    parser.add_argument(
        "--json", action="store_true", help="a JSON object per session, and the total"
    )


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
        per, total = await all_stats(reader, rows)
    finally:
        await reader.close()
    if args.json:
        print(json.dumps({"sessions": [s.as_json() for s in per], "total": total.as_json()},
                         indent=2))  # fmt: skip
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
    return 0


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
