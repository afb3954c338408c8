"""Kill -9 `push` and `pull` mid-run, at random points of their work (10 rounds each, a fixed
seed), and run them again: the remote and the replica hold exactly the source's rows, no more,
no fewer."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import pg_helpers
from pg_helpers import ctx, store

cluster, url = pg_helpers.cluster, pg_helpers.url  # the fixtures both sync modules use

ROUND_RESULTS = 120  # a round's new results: a call and a result each
ROUND_EVENTS = 2 * ROUND_RESULTS

pytestmark = pg_helpers.needs_postgres


def _local_events(path: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.OperationalError:  # the replica is not made yet
        return 0
    try:
        return conn.execute("SELECT count(*) FROM events").fetchone()[0]
    except sqlite3.OperationalError:  # made, its schema not yet
        return 0
    finally:
        conn.close()


def _remote_events(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        try:
            return conn.execute("SELECT count(*) FROM ctxview_events").fetchone()[0]
        except psycopg.errors.UndefinedTable:
            return 0


def _kill_rounds(cmd: list[str], rng: random.Random, env: dict[str, str],
                 between: Callable[[], None], progress: Callable[[], int]) -> int:  # fmt: skip
    """10 runs of `cmd`, each killed -9 once it has committed a random part (up to a third) of
    its round's new rows; `between()` gives each round its work. A kill is timed by progress, not
    by the clock, so a loaded or an idle machine alike cuts each run in the middle of its work."""
    killed = 0
    for _ in range(10):
        base = progress()
        between()
        target = base + rng.randint(2, ROUND_EVENTS // 3)
        p = subprocess.Popen([sys.executable, "-m", "ctxview.cli", *cmd],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, **env})  # fmt: skip
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            if progress() >= target:
                p.send_signal(signal.SIGKILL)
                killed += 1
                break
            time.sleep(0.005)
        p.wait(10)
    return killed


def test_kill_9_push_and_pull(tmp_path: Path, url: str) -> None:
    rng = random.Random(20261201)
    sid = "20261201-080000-cccccc"
    a = store(tmp_path, "a", sid, 300, size=1000)
    env = {"CTXVIEW_MACHINE": "dev-a", "CTXVIEW_SYNC_ROWS": "2"}  # many slices: runs outlast a kill

    def grow() -> None:  # the live session goes on between the rounds
        assert pg_helpers.write_live(a, sid, ROUND_RESULTS, 0, 1000).wait(30) == 0

    killed = _kill_rounds(["--store", str(a), "push", "--to", url], rng, env, grow,
                          lambda: _remote_events(url))  # fmt: skip
    assert killed >= 8  # nearly every round was cut mid-push
    done = ctx("--store", str(a), "push", "--to", url)
    assert done.returncode == 0, done.stderr
    src = pg_helpers.rows(a)
    assert pg_helpers.remote_rows(url, "dev-a") == {"events": src["events"],
                                                    "bodies": src["bodies"]}  # fmt: skip

    def grow_and_push() -> None:
        grow()
        assert ctx("--store", str(a), "push", "--to", url).returncode == 0

    c = tmp_path / "c.db"
    killed = _kill_rounds(["--store", str(c), "pull", "--from", url], rng, env, grow_and_push,
                          lambda: _local_events(c))  # fmt: skip
    assert killed >= 8
    assert ctx("--store", str(c), "pull", "--from", url).returncode == 0
    src = pg_helpers.rows(a)
    assert pg_helpers.remote_rows(url, "dev-a") == {"events": src["events"],
                                                    "bodies": src["bodies"]}  # fmt: skip
    assert pg_helpers.rows(c) == src
