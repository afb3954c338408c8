"""`ctxview serve [--host 127.0.0.1] [--port 8000] [--allow-host NAME] [--no-token] [--session ID]
[--jump ID] [--theme NAME] [--demo [--pace S]]`: the viewer in a browser, through textual-serve.

textual-serve starts one app process per browser tab by running a shell command, and speaks to it
over that process's stdout, so the served command is `ctxview view …` (or `ctxview demo …`) run
again with the same options; nothing inside the app may print to stdout. textual-serve itself has
no authentication and checks neither Origin nor Host: `serve_guard` adds a token (in the URL
printed at start, then a cookie), the served-origin check and the bound-host check. It listens on
127.0.0.1 unless another host is asked for, with a warning.
"""

from __future__ import annotations

import argparse
import secrets
import shlex
import socket
import sys

from ctxview.commands.common import store_path
from ctxview.commands.errors import CliError
from ctxview.serve.guard import WILDCARDS, Guard, is_loopback


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1: this machine only)")  # fmt: skip
    parser.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    parser.add_argument("--public-url", metavar="URL",
                        help="the address browsers use to reach it, when not http://HOST:PORT")  # fmt: skip
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME[:PORT]",
                        help="also answer to this Host name (others are refused: DNS rebinding)")  # fmt: skip
    parser.add_argument("--no-token", action="store_true",
                        help="no token in the URL (a trusted setup only: every local user and "
                        "anyone who can reach the port can then read every session)")  # fmt: skip
    parser.add_argument("--session", help="open this session (id or unique prefix)")
    parser.add_argument("--jump", metavar="ID", help="open at this result id")
    parser.add_argument("--theme", help="the theme (ctxview-dark, ctxview-light, ...)")
    parser.add_argument("--demo", action="store_true",
                        help="serve the demo: each browser tab runs its own demo session")  # fmt: skip
    parser.add_argument("--pace", type=float, default=None, metavar="SECONDS",
                        help="with --demo: pause between steps")  # fmt: skip


LAUNCHER = "import sys; from ctxview.cli import main; sys.exit(main())"
# A demo tab works in temporary folders of its own (store, project copy): it makes them under a
# folder of the tab's and removes that folder when the tab's app ends.
TAB_LAUNCHER = """import shutil, sys, tempfile
tab = tempfile.mkdtemp(prefix="ctxview-serve-tab-")
tempfile.tempdir = tab
from ctxview.cli import main
try:
    code = main()
finally:
    shutil.rmtree(tab, ignore_errors=True)
sys.exit(code)
"""


def ctxview_command(*args: str, own_temp: bool = False) -> str:
    """A shell command that runs this ctxview with `args`, in this interpreter (the one serving,
    so a venv need not be on PATH)."""
    return shlex.join([sys.executable, "-c", TAB_LAUNCHER if own_temp else LAUNCHER, *args])


def served_command(args: argparse.Namespace) -> list[str]:
    """The ctxview arguments each browser tab runs."""
    theme = ["--theme", args.theme] if args.theme else []
    if args.demo:
        pace = ["--pace", str(args.pace)] if args.pace is not None else []
        store = ["--store", str(store_path(args))] if getattr(args, "store", None) else []
        return [*store, "demo", *pace, *theme]
    out = ["--store", str(store_path(args)), "view"]
    if args.session:
        out += ["--session", args.session]
    if args.jump:
        out += ["--jump", args.jump]
    return out + theme


def check(args: argparse.Namespace) -> None:
    """Refuse in one sentence what a browser tab could only show as a dead app."""
    if not 0 < args.port < 65536:
        raise CliError(f"--port must be between 1 and 65535, not {args.port}.")
    if args.pace is not None and not args.demo:
        raise CliError("--pace goes with --demo.")
    if args.pace is not None and args.pace < 0:
        raise CliError("--pace must be 0 or more seconds.")
    if args.theme:
        from ctxview import themes

        if args.theme not in themes.THEMES and args.theme not in themes.textual_theme_names():
            raise CliError(themes.unknown_theme_message(args.theme))
    if not args.demo:
        import asyncio

        from ctxview.commands.view import _check

        asyncio.run(_check(args))  # the store, the session and the id exist
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((args.host, args.port))
        except OSError as exc:
            raise CliError(
                f"Cannot listen on {args.host}:{args.port} ({exc.strerror}); pick another --port."
            ) from None


def page_title(args: argparse.Namespace) -> str:
    """The browser tab's title: the session's, when one is served, then ctxview."""
    if args.demo:
        return "ctxview demo"
    if not args.session:
        return "ctxview"
    import asyncio

    from ctxview.store import Reader

    async def title() -> str:
        async with await Reader.open(store_path(args)) as reader:
            row = await reader.resolve_session(args.session)
            return f"{' '.join((row.title or row.id).split())} · ctxview"

    return asyncio.run(title())


def public_url(args: argparse.Namespace) -> str | None:
    if args.public_url:
        return str(args.public_url).rstrip("/")
    if args.host in WILDCARDS:
        # The page tells the browser where the websocket is: a wildcard address is not one.
        return f"http://{socket.getfqdn()}:{args.port}"
    return None


def run(args: argparse.Namespace) -> int:
    check(args)
    if not is_loopback(args.host):
        print(
            f"ctxview: warning: serving on {args.host}:{args.port}, reachable from other "
            "machines over plain HTTP; anyone who sees the token (or any client, with "
            "--no-token) can read every session in the store.",
            file=sys.stderr,
        )
    if args.no_token:
        print(
            f"ctxview: warning: --no-token: any local user, and anyone who can reach "
            f"{args.host}:{args.port}, can read every session in the store.",
            file=sys.stderr,
        )
    from ctxview.serve.guard import make_server_class

    # The token lives in this process only: not in argv or the environment the tabs inherit.
    token = None if args.no_token else secrets.token_urlsafe(32)
    url = public_url(args)
    guard = Guard.for_server(args.host, args.port, url, args.allow_host, token)
    command = ctxview_command(*served_command(args), own_temp=args.demo)
    server = make_server_class()(command, host=args.host, port=args.port,
                                 title=page_title(args), public_url=url, guard=guard)  # fmt: skip
    server.serve()
    return 0
