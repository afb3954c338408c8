"""The store watcher's own delay: a commit by another process to the watcher's notify(), for
watchfiles `step` values interleaved in blocks (the same load for each), the load printed.

    .venv/bin/python bench/bench_watch.py --steps 16,8 --rounds 6 --commits 10 [--busy 0.5]

--busy F keeps the watcher's event loop busy F of the time (in 5 ms slices, holding the GIL),
as a Textual app painting would. Times are wall clock (time.time) on both sides.

Measured 2026-12-01 (2 cores, shared), interleaved, commit -> notify():
  load 1.4-1.6, loop idle:        step 16: median 24 ms, p95 32; step 8: 13 ms, p95 16
  load 1.3-1.6, loop busy 60%:    step 16: median 26 ms, p95 34; step 8: 16 ms, p95 27
  load 2-4 (6 spinners), busy 60%: step 16: median 45 ms, p95 64; step 8: 28 ms, p95 58
  idle CPU of the watch thread:   step 16: 0.4%; step 8: 0.6-1.0%
The delay is 1.5 x step plus scheduling: watchfiles returns once its set of (change, path) has
not grown for one step; the filter leaves two paths, so `debounce` (200) never binds, and the
notify path awaits nothing. A p95 of hundreds of ms at load 12 is the CPU's and the event loop's
queue, which no watchfiles setting removes. The step stays 16 (under a 60 Hz frame).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxview.store import Reader, Writer
from ctxview.store.records import Event
from ctxview.viewer import watch

ROOT = Path(__file__).resolve().parents[1]
COMMITTER = """
import asyncio, sys, time
from ctxview.store import Writer
from ctxview.store.records import Event
async def main():
    w = await Writer.open(sys.argv[1])
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line.strip():
            break
        await w.append("s", [Event(ts=time.time(), kind="message", role="user", text="x")])
        print(time.time(), flush=True)
    await w.close()
asyncio.run(main())
"""


async def _busy(share: float, stop: asyncio.Event) -> None:
    while not stop.is_set():
        end = time.perf_counter() + 0.005 * share
        while time.perf_counter() < end:
            pass
        await asyncio.sleep(0.005 * (1 - share))


async def _block(path: Path, step: int, commits: int, proc: subprocess.Popen[str]) -> list[float]:
    """`commits` commits, one at a time, each timed to the first notify after it."""
    watch.STEP_MS = step  # read by the watcher when it starts its awatch
    reader = await Reader.open(path)
    seen: list[float] = []
    watcher = watch.StoreWatcher(path, reader, lambda: seen.append(time.time()), poll=3600)
    watcher.start()
    delays: list[float] = []
    assert proc.stdin is not None and proc.stdout is not None
    loop = asyncio.get_running_loop()
    try:
        await asyncio.sleep(0.5)  # the watch thread set up (nothing says when)
        for n in range(commits + 1):
            seen.clear()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            committed = float(await loop.run_in_executor(None, proc.stdout.readline))
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not [t for t in seen if t >= committed]:
                await asyncio.sleep(0.002)
            late = [t for t in seen if t >= committed]
            if n and late:  # the first is a warm-up
                delays.append(late[0] - committed)
            await asyncio.sleep(random.uniform(0.15, 0.35))  # quiet again, at a random phase
    finally:
        await watcher.stop()
        await reader.close()
    return delays


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="16,8")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--busy", type=float, default=0.0)
    args = ap.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    random.seed(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        w = await Writer.open(path)
        await w.create_session("s", next_rid=0x1000, started=0.0)
        await w.append("s", [Event(ts=0.0, kind="message", role="user", text="first")])
        await w.close()
        proc = subprocess.Popen([sys.executable, "-c", COMMITTER, str(path)], cwd=ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        stop = asyncio.Event()
        busy = asyncio.create_task(_busy(args.busy, stop)) if args.busy else None
        got: dict[int, list[float]] = {s: [] for s in steps}
        loads = [os.getloadavg()[0]]
        try:
            for r in range(args.rounds):
                order = steps if r % 2 == 0 else steps[::-1]
                for step in order:
                    got[step] += await _block(path, step, args.commits, proc)
                    loads.append(os.getloadavg()[0])
        finally:
            stop.set()
            if busy:
                await busy
            assert proc.stdin is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
            proc.wait(timeout=30)
    print(f"load (1 min) {min(loads):.1f}-{max(loads):.1f}, loop busy {args.busy:.0%}, "
          f"{args.rounds} rounds x {args.commits} commits per step")  # fmt: skip
    for step, xs in got.items():
        ms = [x * 1000 for x in xs]
        print(f"step {step:3d} ms: n={len(ms)} median {statistics.median(ms):6.1f} ms  "
              f"p95 {_pct(ms, 0.95):6.1f} ms  max {max(ms):6.1f} ms")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
