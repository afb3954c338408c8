"""Kill -9 `push` and `pull` at random moments (10 rounds each, a fixed seed) and run them again:
the remote and the replica hold exactly the source's rows, no more, no fewer."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import pg_helpers
from pg_helpers import ctx, store

pytestmark = pytest.mark.skipif(pg_helpers.available() is not None,
                                reason=str(pg_helpers.available()))  # fmt: skip


@pytest.fixture(scope="module")
def cluster() -> Iterator[pg_helpers.Cluster]:
    with pg_helpers.running() as c:
        yield c


@pytest.fixture
def url(cluster: pg_helpers.Cluster) -> str:
    return pg_helpers.new_db(cluster)


def _kill_rounds(cmd: list[str], rng: random.Random, env: dict[str, str],
                 between: object) -> int:  # fmt: skip
    """10 runs of `cmd`, each killed -9 at a random moment; `between()` gives each new work."""
    killed = 0
    for _ in range(10):
        between()  # type: ignore[operator]
        p = subprocess.Popen([sys.executable, "-m", "ctxview.backend.cli", *cmd],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, **env})  # fmt: skip
        time.sleep(rng.uniform(0.3, 1.0))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait(10)
    return killed


def test_kill_9_push_and_pull(tmp_path: Path, url: str) -> None:
    rng = random.Random(20261201)
    sid = "20261201-080000-cccccc"
    a = store(tmp_path, "a", sid, 300, size=1000)
    env = {"CTXVIEW_MACHINE": "dev-a", "CTXVIEW_SYNC_ROWS": "2"}  # many slices: runs outlast a kill

    def grow() -> None:  # the live session goes on between the rounds
        assert pg_helpers.write_live(a, sid, 120, 0, 1000).wait(30) == 0

    killed = _kill_rounds(["--store", str(a), "push", "--to", url], rng, env, grow)
    assert killed >= 5  # most rounds were cut mid-push
    done = ctx("--store", str(a), "push", "--to", url)
    assert done.returncode == 0, done.stderr
    src = pg_helpers.rows(a)
    assert pg_helpers.remote_rows(url, "dev-a") == {"events": src["events"],
                                                    "bodies": src["bodies"]}  # fmt: skip

    def grow_and_push() -> None:
        grow()
        assert ctx("--store", str(a), "push", "--to", url).returncode == 0

    c = tmp_path / "c.db"
    killed = _kill_rounds(["--store", str(c), "pull", "--from", url], rng, env, grow_and_push)
    assert killed >= 5
    assert ctx("--store", str(c), "pull", "--from", url).returncode == 0
    src = pg_helpers.rows(a)
    assert pg_helpers.remote_rows(url, "dev-a") == {"events": src["events"],
                                                    "bodies": src["bodies"]}  # fmt: skip
    assert pg_helpers.rows(c) == src


