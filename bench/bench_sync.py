"""Team sync through a real PostgreSQL 15 (a cluster of its own, as the tests start it).

    .venv/bin/python bench/bench_sync.py                 # the viewer bench's 100,000-result store
    .venv/bin/python bench/bench_sync.py --results 10000 # a smaller store built here
    .venv/bin/python bench/bench_sync.py --latency-only

(a) push throughput: `ctxview push` of the whole store into an empty database, wall time of the
    process, MB/s of stored text (bodies' shown + stored) and rows/s; then `ctxview pull` of it
    into an empty replica, the same. Then the same push for the real transcripts of
    ../shared/realdata (the files bench_import.py picks), imported by `ctxview import` into a
    fresh store first (skipped when ../shared/realdata is absent).
(b) latency: a live session on device A commits 20 results/s (200 results); `push --watch` on A,
    `pull --watch` into C's replica. For each result, commit on A -> its row in PostgreSQL, and
    commit on A -> its row in C's replica (both polled every 5 ms): p50/p95. Target: p95 <= 1 s.
    Where the time goes, from the followers' own timestamps ($CTXVIEW_SYNC_TRACE): push's wait
    to see the commit (its poll of SQLite's data_version) and its read of the slice (ctxview),
    the slice's PostgreSQL transaction with its NOTIFY (PostgreSQL, loopback round trips
    included), the NOTIFY reaching pull (PostgreSQL), pull's queries (PostgreSQL) and its write
    into the replica (ctxview).
(c) the viewer on the replica pulled in (a): bench_viewer.py's first screen (its own child, the
    same code) on the source store and on the replica, alternately, twice each; the best of each.
(d) proxied sessions (`--proxied-only` for this alone): `ctxview proxy` (in process, the real
    server and recorder) records SESSIONS Claude Code-like sessions of TURNS requests each, every
    request the whole conversation so far (a tool call and a 2 KB result per turn) sent to a
    scripted Messages API on loopback; then the push of that store (its request records: the
    proxy's, the shared rows, the shapes and messages once), the pull into an empty replica, one
    more request per session and the push of only that, and a pass with nothing new.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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

CPU = {"ctxview": 0.0}  # the CPU seconds of the last ctx() process


def ctx(*args: str, **env: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-m", "ctxview.cli", *args], text=True,
                         capture_output=True, env={**os.environ, **env})  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["ctxview"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
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


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def rows_of(said: str) -> int:
    return int(said.split()[1].replace(",", ""))


def cpu_line(c: pg_helpers.Cluster, server_before: float, mb: float) -> str:
    """The wall time depends on the load; the CPU each side used does much less."""
    server, client = c.cpu_seconds() - server_before, CPU["ctxview"]
    return (f"    CPU: ctxview {client:.1f} s, PostgreSQL {server:.1f} s; with a core each: "
            f"~{mb / max(client, server, 1e-9):.1f} MB/s")  # fmt: skip


def push_figure(c: pg_helpers.Cluster, url: str, store: Path, what: str) -> None:
    mb = text_mb(store)
    server = c.cpu_seconds()
    secs, said = ctx("--store", str(store), "push", "--to", url, CTXVIEW_MACHINE="bench")
    time.sleep(0.5)  # the backend's exit, so its CPU is counted
    print(f"(a) push of {what}: {said}")
    print(f"    {mb:,.1f} MB of text in {secs:.1f} s (the process's wall time): {mb / secs:.1f} "
          f"MB/s, {rows_of(said) / secs:,.0f} rows/s ({load()})")  # fmt: skip
    print(cpu_line(c, server, mb))


def throughput(c: pg_helpers.Cluster, store: Path) -> Path:
    """Push and pull of the store; the replica, for (c)."""
    url = pg_helpers.new_db(c)
    push_figure(c, url, store, "the viewer bench's store")
    mb = text_mb(store)
    replica = Path(tempfile.mkdtemp(prefix="ctxview-bench-sync-")) / "replica.db"
    server = c.cpu_seconds()
    secs, said = ctx("--store", str(replica), "pull", "--from", url)
    time.sleep(0.5)
    print(f"    pull: {said.split(' into ')[0]} in {secs:.1f} s: {mb / secs:.1f} MB/s, "
          f"{rows_of(said) / secs:,.0f} rows/s ({load()})")  # fmt: skip
    print(cpu_line(c, server, mb))
    return replica


def real_sessions(c: pg_helpers.Cluster) -> None:
    import bench_import

    if not bench_import.REALDATA.is_dir():
        print("(a) push of the real sessions: skipped, ../shared/realdata is not here")
        return
    # The whole folder, Claude Code and Codex alike, as a person's `ctxview import` of it.
    files = sorted(bench_import.REALDATA.rglob("*.jsonl"))
    store = Path(tempfile.mkdtemp(prefix="ctxview-bench-sync-")) / "real.db"
    ctx("--store", str(store), "import", str(bench_import.REALDATA))
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    conn.close()
    push_figure(c, pg_helpers.new_db(c), store, f"the {len(files)} real transcripts of "
                f"../shared/realdata ({sessions} sessions with their sub-agents)")  # fmt: skip
    shutil.rmtree(store.parent)


def pages(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        n, free = (conn.execute(f"PRAGMA {p}").fetchone()[0]
                   for p in ("page_count", "freelist_count"))  # fmt: skip
        return f"{n * 4096 / 1e6:,.0f} MB in pages, {free:,} free"
    finally:
        conn.close()


def viewer_on_replica(store: Path, replica: Path) -> None:
    import bench_viewer

    got: dict[str, list[float]] = {"local": [], "replica": []}
    for _ in range(2):
        for name, path in (("local", store), ("replica", replica)):
            got[name].append(bench_viewer.run_child("--child", "open", str(path))["first_screen_s"])
    best = {name: min(xs) for name, xs in got.items()}
    each = {name: " / ".join(f"{x:.3f}" for x in xs) for name, xs in got.items()}
    print(f"(c) viewer's first screen (bench_viewer.py (a), local and replica alternately): local "
          f"store {each['local']} s, pulled replica {each['replica']} s; best replica/local "
          f"{best['replica'] / best['local']:.2f} ({load()})")  # fmt: skip
    print(f"    local: {pages(store)}; replica: {pages(replica)}")


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100)[int(p) - 1] if len(values) > 1 else values[0]


def latency(c: pg_helpers.Cluster, n: int = 200, rate: float = 20) -> None:
    url = pg_helpers.new_db(c)
    tmp = Path(tempfile.mkdtemp(prefix="ctxview-bench-sync-"))
    a, replica, sid = tmp / "a.db", tmp / "c.db", "20261201-120000-aaaaaa"
    assert pg_helpers.write_live(a, sid, 1, 0).wait(30) == 0
    traced = tmp / "trace"
    env = {**os.environ, "CTXVIEW_MACHINE": "dev-a", "CTXVIEW_SYNC_TRACE": str(traced)}
    cli = [sys.executable, "-m", "ctxview.cli"]
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
    print(
        f"(b) latency at {rate:g} results/s, {len(commits)} results "
        f"({len(to_pg)} reached PostgreSQL, {len(to_c)} C's replica):"
    )
    for name, xs in (("A commit -> PostgreSQL row", to_pg), ("A commit -> C replica row", to_c)):
        print(f"    {name}: p50 {pct(xs, 50) * 1000:.0f} ms, p95 {pct(xs, 95) * 1000:.0f} ms, "
              f"max {max(xs) * 1000:.0f} ms")  # fmt: skip
    verdict = "met" if pct(to_c, 95) <= 1.0 else "MISSED"
    print(f"    target p95 <= 1 s (A -> C): {verdict} ({load()})")
    parts(commits, traced.read_text().splitlines())


def parts(commits: dict[int, float], lines: list[str]) -> None:
    """Each result's way from A's commit to C's replica, cut at the followers' timestamps."""
    pushes = sorted((float(f[4]), [float(x) for x in f[1:5]], int(f[5]))
                    for f in (ln.split() for ln in lines) if f[0] == "push")  # fmt: skip
    pulls = sorted((float(f[3]), [float(x) for x in f[1:4]], int(f[4]))
                   for f in (ln.split() for ln in lines) if f[0] == "pull")  # fmt: skip
    names = ("push sees the commit (its 50 ms poll of data_version)  ctxview",
             "push reads the slice from SQLite                       ctxview",
             "the slice's transaction, COPY to COMMIT and NOTIFY     PostgreSQL",
             "the NOTIFY reaches pull --watch                        PostgreSQL",
             "pull's queries                                         PostgreSQL",
             "pull writes the replica (SQLite)                       ctxview")  # fmt: skip
    cut: list[list[float]] = [[] for _ in names]
    for rid, at in commits.items():
        push = next((t for _, t, top in pushes if top >= rid and t[0] >= at), None)
        pull = next((t for _, t, top in pulls if top >= rid and t[0] > 0), None)
        if push is None or pull is None or pull[0] < push[3]:
            continue
        woke, _read, begun, done = push
        got, fetched, written = pull
        for i, x in enumerate((woke - at, begun - woke, done - begun, got - done, fetched - got,
                               written - fetched)):  # fmt: skip
            cut[i].append(max(0.0, x))
    print(f"    where the time goes ({len(cut[0])} results traced), p50 / p95 ms:")
    for name, xs in zip(names, cut, strict=True):
        if xs:
            print(f"      {name}  {pct(xs, 50) * 1000:6.1f} / {pct(xs, 95) * 1000:6.1f}")


SESSIONS, TURNS = 10, 60


async def _proxied_store(path: Path) -> int:
    """The proxied store of (d); the bytes the upstream received."""
    import json

    import aiohttp
    from aiohttp import web

    from ctxview.proxy.server import Proxy

    got = [0]

    async def answer(request: web.Request) -> web.Response:
        got[0] += len(await request.read())
        return web.json_response({"id": "msg", "type": "message", "role": "assistant",
                                  "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
                                  "content": [{"type": "text", "text": "ok"}],
                                  "usage": {"input_tokens": 10, "output_tokens": 5}})  # fmt: skip

    app = web.Application(client_max_size=64 << 20)
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    proxy = Proxy(path, upstream=f"http://127.0.0.1:{port}")
    await proxy.start()
    # A store already made: one more request per session (the conversation one turn longer).
    again = path.exists() and path.stat().st_size > 0
    url = f"http://127.0.0.1:{proxy.port}/{proxy.secret}/v1/messages"
    try:
        async with aiohttp.ClientSession() as s:
            for k in range(SESSIONS):
                msgs: list[dict[str, object]] = [{"role": "user", "content": f"task {k}"}]
                for t in range(TURNS + 1 if again else TURNS):
                    use = {"type": "tool_use", "id": f"t{t}", "name": "Read", "input": {"n": t}}
                    result = {"type": "tool_result", "tool_use_id": f"t{t}",
                              "content": f"{k} {t} " + "x" * 2000}  # fmt: skip
                    msgs += [{"role": "assistant", "content": [use]},
                             {"role": "user", "content": [result]}]  # fmt: skip
                    if again and t < TURNS:
                        continue
                    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "You help.",
                            "metadata": {"user_id": json.dumps({"session_id": f"bench-{k}"})},
                            "tools": [{"name": "Read", "input_schema": {}}], "messages": msgs}  # fmt: skip
                    async with s.post(url, data=json.dumps(body),
                                      headers={"content-type": "application/json"}) as resp:  # fmt: skip
                        await resp.read()
        await proxy.recorder.drain()
    finally:
        await proxy.stop()
        await runner.cleanup()
    return got[0]


def proxied(c: pg_helpers.Cluster) -> None:
    import asyncio

    tmp = Path(tempfile.mkdtemp(prefix="ctxview-bench-sync-"))
    store, replica = tmp / "proxied.db", tmp / "replica.db"
    t0 = time.perf_counter()
    sent = asyncio.run(_proxied_store(store))
    built = time.perf_counter() - t0
    url = pg_helpers.new_db(c)
    size = store.stat().st_size + (Path(f"{store}-wal").stat().st_size
                                   if Path(f"{store}-wal").exists() else 0)  # fmt: skip
    print(f"(d) proxied: {SESSIONS} sessions x {TURNS} requests, {sent / 1e6:,.1f} MB of bodies "
          f"forwarded, recorded in {built:.1f} s; the store {size / 1e6:,.1f} MB ({load()})")  # fmt: skip
    server = c.cpu_seconds()
    secs, said = ctx("--store", str(store), "push", "--to", url, CTXVIEW_MACHINE="bench")
    time.sleep(0.5)
    print(f"    push: {said} ({secs:.2f} s the process; {load()})")
    print(f"    CPU: ctxview {CPU['ctxview']:.1f} s, PostgreSQL {c.cpu_seconds() - server:.1f} s")
    secs, said = ctx("--store", str(replica), "pull", "--from", url)
    print(f"    pull into an empty replica: {said.split(' into ')[0]} in {secs:.2f} s ({load()})")
    secs, said = ctx("--store", str(store), "push", "--to", url, CTXVIEW_MACHINE="bench")
    print(f"    push with nothing new: {said} ({secs:.2f} s the process)")
    asyncio.run(_proxied_store(store))
    secs, said = ctx("--store", str(store), "push", "--to", url, CTXVIEW_MACHINE="bench")
    print(f"    push after one more request per session: {said} ({secs:.2f} s the process; "
          f"{load()})")  # fmt: skip
    secs, said = ctx("--store", str(replica), "pull", "--from", url)
    print(f"    pull of it: {said.split(' into ')[0]} in {secs:.2f} s ({load()})")
    a = ctx("--store", str(store), "requests", "cc-bench-0", "--json")[1]
    b = ctx("--store", str(replica), "requests", "cc-bench-0", "--json")[1]
    same = "the same" if a == b else "DIFFERS"
    print(f"    `ctxview requests cc-bench-0 --json` on the replica: {same} "
          f"({len(a.splitlines())} requests)")  # fmt: skip
    shutil.rmtree(tmp)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, help="build a store of N results (default: the "
                        "viewer bench's 100,000)")  # fmt: skip
    parser.add_argument("--latency-only", action="store_true")
    parser.add_argument("--real-only", action="store_true", help="only the real sessions' push")
    parser.add_argument("--proxied-only", action="store_true", help="only (d), proxied sessions")
    args = parser.parse_args()
    why = pg_helpers.available()
    if why:
        print(f"skipped: {why}")
        return 0
    print(f"{load()} on {os.cpu_count()} cores at the start; each figure prints its own")
    with pg_helpers.running() as c:
        if args.real_only:
            real_sessions(c)
            return 0
        if args.proxied_only:
            proxied(c)
            return 0
        if not args.latency_only:
            store = store_for(args.results)
            replica = throughput(c, store)
            real_sessions(c)
        latency(c)
        if not args.latency_only:
            proxied(c)
            if args.results is None:  # bench_viewer's child jumps to ids of its 100,000
                viewer_on_replica(store, replica)
            else:
                print(
                    "(c) viewer on the replica: only with the viewer bench's store (no --results)"
                )
            shutil.rmtree(replica.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
