"""Team sync through a real PostgreSQL 15 (a cluster of its own, as the tests start it).

    .venv/bin/python bench/bench_sync.py                 # the viewer bench's 100,000-result store
    .venv/bin/python bench/bench_sync.py --results 10000 # a smaller store built here
    .venv/bin/python bench/bench_sync.py --latency-only

(a) push throughput: `ctxview push` of the whole store into an empty database, wall time of the
    process, MB/s of stored text (bodies' shown + stored); then `ctxview pull` of it into an empty
    replica, the same.
(b) latency: a live session on device A commits 20 results/s (200 results); `push --watch` on A,
    `pull --watch` into C's replica. For each result, commit on A -> its row in PostgreSQL, and
    commit on A -> its row in C's replica (both polled every 5 ms): p50/p95. Target: p95 <= 1 s.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
import pg_helpers  # noqa: E402


def ctx(*args: str, **env: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "ctxview.backend.cli", *args], text=True,
                         capture_output=True, env={**os.environ, **env})  # fmt: skip
    if out.returncode:
        raise SystemExit(out.stderr)
    return time.perf_counter() - t0, out.stdout.strip()


def store_for(results: int | None) -> Path:
    import asyncio

    import bench_viewer

    if results is None:
        return bench_viewer.fixture(False)[0]
    path = Path(tempfile.gettempdir()) / "ctxview-bench-sync" / f"store-{results}.db"
    if not path.exists():
        bench_viewer.RESULTS = results
        asyncio.run(bench_viewer.build(path))
    return path


def text_mb(path: Path) -> float:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT sum(length(CAST(shown AS BLOB)) + length(CAST(stored AS BLOB))) "
                            "FROM bodies").fetchone()[0] / 1e6  # fmt: skip
    finally:
        conn.close()


def throughput(c: pg_helpers.Cluster, store: Path) -> None:
    url = pg_helpers.new_db(c)
    mb = text_mb(store)
    secs, said = ctx("--store", str(store), "push", "--to", url, CTXVIEW_MACHINE="bench")
    print(f"(a) push: {said}")
    print(f"    {mb:,.0f} MB of text in {secs:.1f} s: {mb / secs:.1f} MB/s")
    replica = Path(tempfile.mkdtemp(prefix="ctxview-bench-sync-")) / "replica.db"
    secs, said = ctx("--store", str(replica), "pull", "--from", url)
    print(f"    pull: {said.split(' into ')[0]} in {secs:.1f} s: {mb / secs:.1f} MB/s")
    replica.unlink()


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100)[int(p) - 1] if len(values) > 1 else values[0]


def latency(c: pg_helpers.Cluster, n: int = 200, rate: float = 20) -> None:
    url = pg_helpers.new_db(c)
    tmp = Path(tempfile.mkdtemp(prefix="ctxview-bench-sync-"))
    a, replica, sid = tmp / "a.db", tmp / "c.db", "20261201-120000-aaaaaa"
    assert pg_helpers.write_live(a, sid, 1, 0).wait(30) == 0
    env = {**os.environ, "CTXVIEW_MACHINE": "dev-a"}
    cli = [sys.executable, "-m", "ctxview.backend.cli"]
    procs = [subprocess.Popen([*cli, "--store", str(a), "push", "--to", url, "--watch"], env=env,
                              stdout=subprocess.DEVNULL),
             subprocess.Popen([*cli, "--store", str(replica), "pull", "--from", url, "--watch"],
                              env=env, stdout=subprocess.DEVNULL)]  # fmt: skip
    time.sleep(3)  # both followers up
    seen_pg: dict[int, float] = {}
    seen_c: dict[int, float] = {}
    stop = threading.Event()

    def watch() -> None:
        pg = psycopg.connect(url, autocommit=True)
        while not stop.is_set():
            now = time.time()
            r = pg.execute("SELECT coalesce(max(rid), 0) FROM ctxview_events WHERE session = %s",
                           (sid,)).fetchone()  # fmt: skip
            seen_pg.setdefault(int(r[0]), now)  # type: ignore[index]
            if replica.exists():
                try:
                    con = sqlite3.connect(f"file:{replica}?mode=ro", uri=True)
                    got = con.execute("SELECT coalesce(max(rid), 0) FROM events WHERE session = ?",
                                      (sid,)).fetchone()[0]  # fmt: skip
                    con.close()
                    seen_c.setdefault(int(got), now)
                except sqlite3.Error:
                    pass
            time.sleep(0.005)
        pg.close()

    t = threading.Thread(target=watch)
    t.start()
    w = pg_helpers.write_live(a, sid, n, rate)
    commits = {}
    assert w.stdout is not None
    for line in w.stdout:
        rid, at = line.split()
        commits[int(rid)] = float(at)
    w.wait()
    time.sleep(3)
    stop.set()
    t.join()
    for p in procs:
        p.terminate()
        p.wait(10)

    def lags(seen: dict[int, float]) -> list[float]:
        out = []
        marks = sorted(seen.items())
        for rid, at in commits.items():
            first = next((when for top, when in marks if top >= rid), None)
            if first is not None:
                out.append(max(0.0, first - at))
        return out

    to_pg, to_c = lags(seen_pg), lags(seen_c)
    print(f"(b) latency at {rate:g} results/s, {len(commits)} results "
          f"({len(to_pg)} reached PostgreSQL, {len(to_c)} C's replica):")
    for name, xs in (("A commit -> PostgreSQL row", to_pg), ("A commit -> C replica row", to_c)):
        print(f"    {name}: p50 {pct(xs, 50) * 1000:.0f} ms, p95 {pct(xs, 95) * 1000:.0f} ms, "
              f"max {max(xs) * 1000:.0f} ms")  # fmt: skip
    verdict = "met" if pct(to_c, 95) <= 1.0 else "MISSED"
    print(f"    target p95 <= 1 s (A -> C): {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, help="build a store of N results (default: the "
                        "viewer bench's 100,000)")  # fmt: skip
    parser.add_argument("--latency-only", action="store_true")
    args = parser.parse_args()
    why = pg_helpers.available()
    if why:
        print(f"skipped: {why}")
        return 0
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with pg_helpers.running() as c:
        if not args.latency_only:
            throughput(c, store_for(args.results))
        latency(c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
