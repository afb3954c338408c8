"""What `ctxview` says when there is no store, and that doing it is true: the demo (and an
import) writes the store the viewer would have opened. A demo's SQLite error names its store
(the default one, or --store), as every command's does."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from ctxview import cli

CTXVIEW = Path(sys.executable).with_name("ctxview")


def _ctxview(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CTXVIEW), *args], env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_the_no_store_sentence_says_a_command_that_writes_that_store(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CTXVIEW_STORE"}
    env.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "state"))
    default = tmp_path / "state" / "ctxview" / "store.db"
    other = tmp_path / "elsewhere" / "my store.db"
    for given, store in (([], default), (["--store", str(other)], other)):
        done = _ctxview(env, *given)
        assert done.returncode == 1 and not store.exists()
        said = done.stderr.strip()
        assert said.startswith(f"ctxview: There is no store at {store} yet: "), said
        demo = re.search(r"`ctxview demo([^`]*)`", said)
        assert demo is not None, said
        # Run the command it names: it writes the very store the viewer looks for.
        made = _ctxview(env, "demo", *shlex.split(demo.group(1)), "--no-view", "--pace", "0")
        assert made.returncode == 0, made.stderr
        assert f"store: {store}" in made.stdout
        sid = made.stdout.split("session: ", 1)[1].split()[0]
        listed = _ctxview(env, *given, "sessions")
        assert listed.returncode == 0 and sid in listed.stdout, listed


def test_a_demo_store_error_names_the_store(tmp_path: Path, monkeypatch, capsys) -> None:
    store = tmp_path / "store.db"
    monkeypatch.setenv("CTXVIEW_STORE", str(store))
    args = cli.build_parser().parse_args(["demo"])
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock

    def write(_: object) -> int:
        conn = sqlite3.connect(store, timeout=0)
        try:
            conn.execute("INSERT INTO t VALUES (1)")  # sqlite3.OperationalError: locked
        finally:
            conn.close()
        return 0

    try:
        assert cli._run(args, write) == 1
    finally:
        holder.close()
    err = capsys.readouterr().err
    assert err.startswith(f"ctxview: The store at {store} is busy"), err
