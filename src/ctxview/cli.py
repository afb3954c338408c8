"""The `ctxview` command. Each sub-command lives in src/ctxview/commands/<name>.py with
`add_arguments(parser)` and `run(args) -> int`; this file only wires them up."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ctxview.commands.errors import CliError
from ctxview.store.connect import DatabaseError
from ctxview.store.paths import StoreWarning
from ctxview.store.schema import StoreError

# name -> (module, one-line help). Bare `ctxview` is `ctxview view`.
COMMANDS: dict[str, tuple[str, str]] = {
    "view": ("view", "open the viewer on the store (the default command)"),
    "demo": ("demo", "write a scripted live session and watch it in the viewer"),
    "serve": ("serve", "serve the viewer to a browser (textual-serve)"),
    "sessions": ("sessions", "list the store's sessions"),
    "show": ("show", "print a session's transcript as the model saw it"),
    "recall": ("recall", "print a stored result in full"),
    "conformance": ("conformance", "run conformance case files against the engine"),
    "import": ("import_", "import Claude Code and Codex transcripts through the rules"),
    "follow": ("follow", "follow a transcript that is still being written"),
    "stats": ("stats", "what hygiene saved, per session and in total"),
    "search": ("search", "find messages, calls, thinking, summaries and results"),
    "export": ("export", "a session as one HTML file, Markdown or JSON, secrets redacted"),
    "hook": ("hook", "answer a Claude Code hook event (run by Claude Code; see install)"),
    "install": ("install", "set up Claude Code or Codex to run through ctxview"),
    "uninstall": ("uninstall", "remove what install added to a host's config"),
    "doctor": ("doctor", "check the set-up and show recent hook failures"),
    "mcp": ("mcp", "serve the engine's tools to an agent over MCP (stdio; run by the host)"),
    "push": ("push", "push the store's sessions to a team's PostgreSQL"),
    "pull": ("pull", "pull a team's sessions from PostgreSQL into the store"),
    "proxy": ("proxy", "a local proxy that records every request an agent sends its model API"),
    "run": ("run", "run a command (claude, codex, ...) through the recording proxy"),
    "requests": ("requests", "a session's recorded requests, or as JSON lines exactly as sent"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `only` that one (a run imports only its command's
    module: the others' imports were a tenth of a short command's CPU time)."""
    parser = argparse.ArgumentParser(
        prog="ctxview",
        description="See what an AI coding agent's context really holds.",
    )
    parser.add_argument("--store", help="the store file (default: $CTXVIEW_STORE or "
                        "~/.local/state/ctxview/store.db)")  # fmt: skip
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            mod = importlib.import_module(f"ctxview.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ctxview.commands.{module}":
                raise
            continue  # a command not built yet
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--store", default=argparse.SUPPRESS, help="the store file")
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    helping = any(a in ("-h", "--help") for a in argv)
    named = next((a for a in argv if a in COMMANDS), None)
    if named is None and not helping:
        argv, named = ["view", *argv], "view"
    parser = build_parser(None if helping else named)
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    with warnings.catch_warnings():
        warnings.showwarning = _show_store_warning
        return _run(args, run)


def _run(args: argparse.Namespace, run: Any) -> int:
    try:
        return int(run(args) or 0)
    except (CliError, StoreError) as exc:
        print(f"ctxview: {exc}", file=sys.stderr)
        return 1
    except DatabaseError as exc:
        # A full disk, a read-only or busy store, or damage past what the open's check saw.
        from ctxview.store.connect import sentence

        print(f"ctxview: {sentence(exc, _store_named(args))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `ctxview show … | head`: the reader left; exit quietly, as a Unix filter does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _store_named(args: argparse.Namespace) -> Path:
    """The store an error is about, the demo's too: it writes the default store (or --store),
    which the next plain `ctxview` opens."""
    from ctxview.commands.common import store_path

    return store_path(args)


_default_showwarning = warnings.showwarning


def _show_store_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A StoreWarning is one line on stderr, like the errors; any other warning as Python shows
    it."""
    if issubclass(category, StoreWarning):
        print(f"ctxview: {message}", file=sys.stderr)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


if __name__ == "__main__":
    sys.exit(main())
