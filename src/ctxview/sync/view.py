"""`ctxview view --store postgresql://…`: pull into a cache store of that server and database,
then keep pulling (`pull --watch`, in a process of its own) while the viewer reads the cache:
the viewer itself reads SQLite only."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ctxview.store.paths import own_folder
from ctxview.sync.pull import pull
from ctxview.sync.remote import describe


def cache_path(url: str) -> Path:
    """One cache per server and database (the password is not part of the name)."""
    digest = hashlib.sha256(describe(url).encode()).hexdigest()[:16]
    return own_folder() / "team" / f"{digest}.db"


@contextmanager
def following(url: str) -> Iterator[Path]:
    cache = cache_path(url)
    asyncio.run(pull(cache, url, quiet=True))  # the first copy; its errors are the command's
    log = open(cache.with_suffix(".log"), "a")  # noqa: SIM115 (the follower's, closed below)
    # The URL goes by the environment, not the command line: `ps` would show its password.
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxview.cli", "--store", str(cache), "pull", "--watch",
         "--quiet"], env={**os.environ, "CTXVIEW_PULL_URL": url},
        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
    )  # fmt: skip
    try:
        yield cache
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
