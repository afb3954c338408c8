"""`ctxview proxy [--upstream URL] [--port N] [--elide] [--cache auto]`: the recording proxy on 127.0.0.1 until
interrupted; it prints the base-URL variables that send a client through it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from typing import TYPE_CHECKING

from ctxview.commands.common import store_path
from ctxview.proxy.rewrite import Rewriter

if TYPE_CHECKING:
    from ctxview.proxy.server import Endpoint, Proxy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", help="where requests go (default: the Anthropic API for "
                        "Messages, the OpenAI API for Responses and Chat Completions)")  # fmt: skip
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    add_rewrite_arguments(parser)


def add_rewrite_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--elide", action="store_true", help="once a conversation's messages "
                        "pass elide.threshold_chars, send old tool output as stubs naming its id "
                        "(Anthropic Messages, OpenAI Responses and Chat Completions)")  # fmt: skip
    parser.add_argument("--cache", choices=("auto",), help="auto: cache breakpoints on the system "
                        "prompt and the latest message of an Anthropic request that has "
                        "none")  # fmt: skip


def rewriter(args: argparse.Namespace) -> Rewriter:
    return Rewriter(elide=bool(args.elide), cache=args.cache)


def check_upstream(url: str | None) -> None:
    from ctxview.commands.errors import CliError

    if url is not None and not url.startswith(("http://", "https://")):
        raise CliError(f"--upstream {url!r} is not an http:// or https:// URL.")


def run(args: argparse.Namespace) -> int:
    check_upstream(args.upstream)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))
    return 0


async def start(args: argparse.Namespace) -> tuple[Proxy, Endpoint]:
    """The proxy the arguments ask for, listening; a clear error when it cannot."""
    from ctxview.commands.errors import CliError
    from ctxview.proxy.server import Proxy

    store = store_path(args)
    proxy = Proxy(
        store,
        upstream=args.upstream,
        port=args.port,
        workspace=os.getcwd(),
        rewriter=rewriter(args),
    )
    try:
        end = await proxy.start()
    except OSError as exc:
        await proxy.stop()
        raise CliError(
            f"The proxy could not listen on 127.0.0.1:{args.port} ({exc.strerror})."
        ) from None
    return proxy, end


async def _serve(args: argparse.Namespace) -> None:
    store = store_path(args)
    proxy, end = await start(args)
    print(f"ctxview proxy on {end.base} recording into {store}", file=sys.stderr)
    print("Send a client through it with:", file=sys.stderr)
    for k, v in end.variables().items():
        print(f"export {k}={v}")
    print(f'# Codex: codex -c openai_base_url="{end.base}/v1" ...', file=sys.stderr)
    sys.stdout.flush()
    try:
        await asyncio.Event().wait()
    finally:
        await proxy.stop()
