"""`ctxview search QUERY [--session ID] [--json] [--limit N]`: messages, tool calls, thinking,
compaction summaries and tool results that match, across every session or in one."""

from __future__ import annotations

import argparse
import asyncio
import json

from ctxview.commands.common import open_reader
from ctxview.commands.errors import CliError
from ctxview.rules.ids import format_id

LIMIT = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="+", help="words to find (every one must appear)")
    parser.add_argument("--session", help="only this session (id or unique prefix)")
    parser.add_argument(
        "--limit", type=int, default=LIMIT, help=f"at most N hits (default {LIMIT})"
    )
    parser.add_argument("--json", action="store_true", help="a JSON object: hits and whether more")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    if args.limit < 1:
        raise CliError("--limit must be at least 1.")
    from ctxview.sync.remote import is_remote

    if is_remote(getattr(args, "store", None)):
        return await _run_remote(args, query)
    reader = await open_reader(args)
    try:
        session = (await reader.resolve_session(args.session)).id if args.session else None
        hits, more = await reader.search_hits(query, session=session, limit=args.limit)
    finally:
        await reader.close()
    if args.json:
        print(json.dumps({"query": query, "hits": [h.as_json() for h in hits], "more": more},
                         indent=2, ensure_ascii=False))  # fmt: skip
        return 0 if hits else 1
    if not hits:
        where = f" in session {session}" if session else ""
        print(f"Nothing matches {query!r}{where}.")
        return 1
    for h in hits:
        what = format_id(h.rid) if h.rid is not None else h.role or h.tool or h.kind
        label = f"{h.kind} {what}" if h.kind != "message" else f"message {what}"
        print(f"{h.session}  {h.seq:>6}  {label:<22} {h.snippet}")
    n = len(hits)
    print(f"{n:,}{'+' if more else ''} hit{'s' * (n != 1 or more)}"
          + (f" (the first {n:,}; --limit shows more)" if more else ""))  # fmt: skip
    return 0


async def _run_remote(args: argparse.Namespace, query: str) -> int:
    """`--store postgresql://…`: the team store, searched in PostgreSQL (src/ctxview/sync/search.py)."""
    from ctxview.sync.search import search

    hits, more = await search(args.store, query, session=args.session, limit=args.limit)
    if args.json:
        print(json.dumps({"query": query, "hits": [h.as_json() for h in hits], "more": more},
                         indent=2, ensure_ascii=False))  # fmt: skip
        return 0 if hits else 1
    if not hits:
        print(f"Nothing matches {query!r}.")
        return 1
    for h in hits:
        what = format_id(h.rid) if h.rid is not None else h.label or h.kind
        print(f"{h.machine}/{h.session}  {h.seq:>6}  {h.kind + ' ' + what:<22} {h.snippet}")
    n = len(hits)
    print(f"{n:,}{'+' if more else ''} hit{'s' * (n != 1 or more)}")
    return 0
