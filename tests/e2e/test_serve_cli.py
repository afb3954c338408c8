"""`ctxview serve`: what it serves, where, and its refusals (no browser needed)."""

from __future__ import annotations

import argparse
import shlex
import socket
import subprocess
from pathlib import Path

from e2e_helpers import CTXVIEW, SmallStore, free_port

from ctxview.cli import build_parser
from ctxview.commands.serve import ctxview_command, is_loopback, public_url, served_command


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_served_command_reruns_view_with_the_same_options() -> None:
    args = parse("--store", "/s/store.db", "serve", "--session", "abc", "--jump", "#1a2b",
                 "--theme", "ctxview-light")  # fmt: skip
    assert served_command(args) == ["--store", "/s/store.db", "view", "--session", "abc",
                                     "--jump", "#1a2b", "--theme", "ctxview-light"]  # fmt: skip
    demo = parse("serve", "--demo", "--pace", "0.5")
    assert served_command(demo) == ["demo", "--pace", "0.5"]
    # The shell line quotes every argument (a bare #1a2b would start a comment).
    line = ctxview_command(*served_command(args))
    assert shlex.split(line)[3:] == served_command(args)
    assert "'#1a2b'" in line


def test_loopback_and_public_url() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert public_url(parse("serve")) is None
    assert public_url(parse("serve", "--host", "0.0.0.0", "--port", "9000")).endswith(":9000")
    given = parse("serve", "--public-url", "https://example.test/")
    assert public_url(given) == "https://example.test"


def test_refusals_are_one_sentence(small_store: SmallStore, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        cases = [
            (["--store", str(small_store.path), "serve", "--port", str(taken)], "--port"),
            (["--store", str(tmp_path / "none.db"), "serve"], "ctxview demo"),
            (["--store", str(small_store.path), "serve", "--theme", "nope"], "ctxview-dark"),
            (["--store", str(small_store.path), "serve", "--pace", "1"], "--demo"),
        ]
        for argv, words in cases:
            done = subprocess.run([CTXVIEW, *argv], capture_output=True, text=True, timeout=30)
            assert done.returncode == 1, argv
            assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_another_host_warns_on_stderr(small_store: SmallStore) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [CTXVIEW, "--store", str(small_store.path), "serve", "--host", "0.0.0.0",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "warning" in first and "reachable from other machines" in first
