"""`ctxview view [--session ID] [--jump ID] [--theme NAME]`: the viewer (bare `ctxview` runs it)."""

from __future__ import annotations

import argparse
import asyncio
import shlex

from ctxview.commands.common import store_path
from ctxview.commands.errors import CliError
from ctxview.rules.ids import format_id, parse_id
from ctxview.store import Reader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", help="open this session (id or unique prefix)")
    parser.add_argument("--jump", metavar="ID", help="open at this result id (#1a2b or 1a2b)")
    parser.add_argument("--theme", help="the theme (ctxview-dark, ctxview-light, ...)")


async def _check(args: argparse.Namespace) -> str | None:
    """Refuse early, in one sentence, what the app could only show as a crash: a missing store,
    an unknown session, an id that is not there."""
    path = store_path(args)
    if not path.exists():
        # The same --store, or the demo and the import would write another store than this.
        given = f" --store {shlex.quote(str(path))}" if getattr(args, "store", None) else ""
        raise CliError(
            f"There is no store at {path} yet: `ctxview demo{given}` writes a sample session to "
            f"it, `ctxview import{given} ~/.claude/projects` your Claude Code sessions."
        )
    reader = await Reader.open(path)
    try:
        if not (args.session or args.jump):
            return None
        session_id = (await reader.resolve_session(args.session)).id
        if args.jump:
            rid = parse_id(args.jump)
            if rid is None:
                raise CliError(f"{args.jump!r} is not a result id (hex digits, with or without #).")
            # The id may be a sub-agent's (or its parent's): one id space per session tree.
            holder = await reader.tree_holder(session_id, rid)
            if holder is None:
                raise CliError(f"There is no result {format_id(rid)} in session {session_id}.")
            session_id = holder
        return session_id
    finally:
        await reader.close()


def run(args: argparse.Namespace) -> int:
    from ctxview.sync.remote import is_remote

    if is_remote(getattr(args, "store", None)):
        from ctxview.sync.view import following

        with following(args.store) as cache:  # a replica kept up to date while the viewer runs
            args.store = str(cache)
            return run(args)
    session_id = asyncio.run(_check(args))
    if args.theme:
        from ctxview import themes

        if args.theme not in themes.THEMES and args.theme not in themes.textual_theme_names():
            raise CliError(themes.unknown_theme_message(args.theme))
    from ctxview.viewer.app import CtxviewApp

    CtxviewApp(store_path(args), session=session_id, jump=args.jump, theme=args.theme).run()
    return 0
