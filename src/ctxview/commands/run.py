"""`ctxview run [--upstream URL] [--elide] [--cache auto] -- COMMAND ...`: a proxy for the command's life, the command
run with the base-URL variables pointing at it (`ctxview run -- claude`, `ctxview run --
codex`). Codex reads no variable for its base URL, so `-c openai_base_url=…` is put after
`codex`. The command's exit status is ctxview's."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from ctxview.commands.proxy import add_rewrite_arguments, check_upstream, start

DRAIN_SECONDS = 10.0  # at the end, for the last records to be written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", help="where requests go (default: the Anthropic API for "
                        "Messages, the OpenAI API for Responses and Chat Completions)")  # fmt: skip
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    add_rewrite_arguments(parser)
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")


def command_line(cmd: list[str], base: str) -> list[str]:
    """The command as run: Codex gets its base URL as a config override."""
    if cmd and Path(cmd[0]).name == "codex":
        return [cmd[0], "-c", f'openai_base_url="{base}/v1"', *cmd[1:]]
    return cmd


def run(args: argparse.Namespace) -> int:
    from ctxview.commands.errors import CliError

    check_upstream(args.upstream)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise CliError("Give the command to run after --, e.g. ctxview run -- claude.")
    return asyncio.run(_run(args, cmd))


async def _run(args: argparse.Namespace, cmd: list[str]) -> int:
    from ctxview.commands.errors import CliError

    proxy, end = await start(args)
    env = {**os.environ, **end.variables()}
    loop = asyncio.get_running_loop()
    try:
        try:
            child = await asyncio.create_subprocess_exec(*command_line(cmd, end.base), env=env)
        except OSError as exc:
            raise CliError(f"Could not run {cmd[0]} ({exc.strerror}).") from None
        # Ctrl-C reaches the command (same process group); ctxview waits for it to end.
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, _pass_on, child, sig)
        code = await child.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proxy.recorder.drain(), DRAIN_SECONDS)
        rec = proxy.recorder
        await proxy.stop()
        if rec.lost:
            print(f"ctxview: {rec.lost} proxied request(s) not recorded; see ctxview doctor.",
                  file=sys.stderr)  # fmt: skip
    return code if code >= 0 else 128 - code


def _pass_on(child: asyncio.subprocess.Process, sig: int) -> None:
    if sig == signal.SIGTERM and child.returncode is None:
        child.send_signal(sig)
