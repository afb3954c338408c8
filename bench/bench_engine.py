"""The engine's speed and memory against issue 2's targets, on a real store in a temp folder.

    .venv/bin/python bench/bench_engine.py            # all three parts (about a minute)
    .venv/bin/python bench/bench_engine.py --only typical --rounds 500

Prints its figures and a verdict per target; exits 1 with --strict when a target is missed.
Not a timed test: the figures depend on the machine and on what else runs on it.

(a) typical: one round inserts a generic 39,000-character output of 500 lines (capped by lines),
    runs a read of a fresh 300-line file and an edit of that file; each result is timed end to
    end (built, stored, committed). Target: median <= 2 ms per result.
(b) big: a 200 MB command output through `session.insert("bash", ...)` in a fresh process,
    stored in full and capped. Peak memory is the RSS high-water mark during the insert minus
    the RSS just before it (the output string already built), read from /proc/self/status.
    Targets: under 3x the output's size, under 5 s; the stored body is checked to be 200 MB.
    The same once more through `session.run("bash")`, where the engine runs `yes | head -c`
    and holds the output's bytes and then its text itself.
(c) flat: 100,000 results into one session; the rate of the first 10,000 against the last
    10,000. Target: the last no slower than the first by more than 20%.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxview.engine.session import Session
from ctxview.store import Writer

BIG_CHARS = 200_000_000


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _generic_output(i: int) -> str:
    """A test runner's log: 500 lines, 39,000 characters (capped by its lines, not its size)."""
    lines = [f"tests/test_module_{i}_{n:03}.py::TestThing::test_case_{n:03} PASSED    [{n // 5:3}%] (0.01s)"
             for n in range(500)]  # fmt: skip
    text = "\n".join(lines)
    return text[:39_900]


def _source_file(i: int) -> str:
    return "".join(f"    value_{i}_{n} = compute({n}, 'some text here')  # line {n}\n"
                   for n in range(300))  # fmt: skip


async def bench_typical(root: Path, rounds: int) -> dict[str, Any]:
    ws = root / "ws"
    ws.mkdir()
    for i in range(rounds):
        (ws / f"mod_{i}.py").write_text(_source_file(i))
    outputs = [_generic_output(i) for i in range(rounds)]
    # Wall time is the target; CPU time (all threads of the process, the SQLite thread included)
    # says how much of it was this work rather than waiting for a core on a busy machine.
    wall: dict[str, list[float]] = {"generic": [], "read": [], "edit": []}
    cpu: dict[str, list[float]] = {"generic": [], "read": [], "edit": []}

    async def timed(kind: str, step: Any) -> None:
        t, c = time.perf_counter(), time.process_time()
        await step
        wall[kind].append(time.perf_counter() - t)
        cpu[kind].append(time.process_time() - c)

    async with await Writer.open(root / "store" / "store.db") as writer:
        session = await Session.start(writer, ws, title="bench typical")
        for i in range(rounds):
            await timed("generic", session.insert("bash", {"command": f"pytest -k {i}"},
                                                  outputs[i]))  # fmt: skip
            await timed("read", session.run("read", {"path": f"mod_{i}.py"}))
            assert session.last is not None and session.last.rkind == "full"
            await timed("edit", session.run("edit", {"path": f"mod_{i}.py",
                        "old_string": f"value_{i}_7 =", "new_string": f"renamed_{i}_7 ="}))  # fmt: skip
            assert session.last is not None and session.last.rkind == "edit"
    every = [t for ts in wall.values() for t in ts]
    every_cpu = [t for ts in cpu.values() for t in ts]
    out: dict[str, Any] = {
        "results": len(every),
        "median_ms": statistics.median(every) * 1000,
        "p95_ms": _percentile(every, 0.95) * 1000,
        "cpu_median_ms": statistics.median(every_cpu) * 1000,
    }
    for kind, ts in wall.items():
        out[kind] = {"median_ms": statistics.median(ts) * 1000,
                     "p95_ms": _percentile(ts, 0.95) * 1000,
                     "cpu_median_ms": statistics.median(cpu[kind]) * 1000}  # fmt: skip
    return out


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


async def _big_child(root: Path, how: str) -> dict[str, Any]:
    """Runs in its own process, so the high-water mark belongs to this one result. `insert`:
    the harness hands the engine the output (built before the measure starts); `run`: the
    engine runs the command itself and holds its bytes, then its text."""
    ws = root / "ws"
    ws.mkdir()
    line = "x" * 99 + "\n"
    output = line * (BIG_CHARS // len(line)) if how == "insert" else ""
    command = f"yes {'x' * 99} | head -c {BIG_CHARS}"
    store = root / "store" / "store.db"
    async with await Writer.open(store) as writer:
        session = await Session.start(writer, ws, title="bench big")
        before = _status("VmRSS")
        try:  # reset the high-water mark to the current RSS (Linux >= 4.0)
            Path("/proc/self/clear_refs").write_text("5")
            hwm_reset = True
        except OSError:
            hwm_reset = False
        t = time.perf_counter()
        if how == "insert":
            shown = await session.insert("bash", {"command": command}, output)
        else:
            shown = await session.run("bash", {"command": command})
        elapsed = time.perf_counter() - t
        peak = _status("VmHWM")
        rid = session.last.rid if session.last else None
    del output
    with sqlite3.connect(store) as conn:
        stored_len, stored_chars, capped = conn.execute(
            "SELECT length(CAST(b.stored AS TEXT)), e.stored_chars, e.capped FROM bodies b JOIN events e "
            "ON e.session = b.session AND e.rid = b.rid WHERE b.rid = ?",
            (rid,),
        ).fetchone()
    return {
        "chars": BIG_CHARS,
        "seconds": elapsed,
        "rss_before": before,
        "peak_delta": peak - before,
        "hwm_reset": hwm_reset,
        "stored_length": stored_len,
        "stored_chars_column": stored_chars,
        "capped": capped,
        "shown_chars": len(shown),
    }


def bench_big(how: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--big-child", how],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


async def bench_flat(root: Path, results: int, block: int) -> dict[str, Any]:
    ws = root / "ws"
    ws.mkdir()
    rates: list[float] = []
    cpu_rates: list[float] = []  # results per CPU second: the same, less shaken by other work
    async with await Writer.open(root / "store" / "store.db") as writer:
        session = await Session.start(writer, ws, title="bench flat")
        rss_start = _status("VmRSS")
        t, c = time.perf_counter(), time.process_time()
        for i in range(results):
            output = f"step {i}: ok\n" + f"log line for {i} " * 15 + "\ndone\n"
            await session.insert("bash", {"command": f"make step-{i}"}, output)
            if (i + 1) % block == 0:
                now, cnow = time.perf_counter(), time.process_time()
                rates.append(block / (now - t))
                cpu_rates.append(block / max(cnow - c, 1e-9))
                print(f"  flat: {i + 1:>7} results, {rates[-1]:,.0f}/s, "
                      f"{cpu_rates[-1]:,.0f}/CPU s", file=sys.stderr)  # fmt: skip
                t, c = now, cnow
        rss_growth = _status("VmRSS") - rss_start
    return {"results": results, "block": block, "rates": rates, "cpu_rates": cpu_rates,
            "first": rates[0], "last": rates[-1], "last_vs_first": rates[-1] / rates[0],
            "cpu_last_vs_first": cpu_rates[-1] / cpu_rates[0],
            "rss_growth": rss_growth}  # fmt: skip


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("typical", "big", "flat"), action="append")
    parser.add_argument("--rounds", type=int, default=300, help="typical: rounds of three results")
    parser.add_argument("--results", type=int, default=100_000, help="flat: results in all")
    parser.add_argument("--block", type=int, default=10_000, help="flat: results per rate")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--big-child", choices=("insert", "run"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.big_child:
        with tempfile.TemporaryDirectory(prefix="ctxview-bench-") as tmp:
            print(json.dumps(await _big_child(Path(tmp), args.big_child)))
        return 0

    parts = args.only or ["typical", "big", "flat"]
    missed = []
    print(f"ctxview engine bench: python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    if "typical" in parts:
        with tempfile.TemporaryDirectory(prefix="ctxview-bench-") as tmp:
            r = await bench_typical(Path(tmp), args.rounds)
        ok = r["median_ms"] <= 2.0
        missed += [] if ok else ["typical"]
        print(f"(a) typical result, {r['results']} results: median {r['median_ms']:.2f} ms, "
              f"p95 {r['p95_ms']:.2f} ms (target median <= 2 ms: {_verdict(ok)}); "
              f"CPU time median {r['cpu_median_ms']:.2f} ms")  # fmt: skip
        for kind in ("generic", "read", "edit"):
            print(f"    {kind:8} median {r[kind]['median_ms']:.2f} ms, "
                  f"p95 {r[kind]['p95_ms']:.2f} ms, CPU median {r[kind]['cpu_median_ms']:.2f} ms")  # fmt: skip
    if "big" in parts:
        for how, label in (("insert", 'session.insert("bash")'), ("run", 'session.run("bash")')):
            r = bench_big(how)
            size = r["chars"]
            ratio = r["peak_delta"] / size
            ok = ratio < 3 and r["seconds"] < 5 and r["stored_length"] == size and r["capped"] == 1
            missed += [] if ok else [f"big ({how})"]
            print(f"(b) 200 MB output through {label}: {r['seconds']:.2f} s, peak RSS "
                  f"+{r['peak_delta'] / 1e6:.0f} MB = {ratio:.2f}x the output (RSS high-water "
                  f"delta{'' if r['hwm_reset'] else ', high-water not reset: overstated'}), "
                  f"stored {r['stored_length']:,} chars, shown {r['shown_chars']:,} chars, "
                  f"capped={r['capped']} (target < 3x and < 5 s: {_verdict(ok)})")  # fmt: skip
    if "flat" in parts:
        with tempfile.TemporaryDirectory(prefix="ctxview-bench-") as tmp:
            r = await bench_flat(Path(tmp), args.results, args.block)
        ok = r["last_vs_first"] >= 0.8
        missed += [] if ok else ["flat"]
        print(f"(c) {r['results']:,} results in one session: first {r['block']:,} "
              f"{r['first']:,.0f}/s, last {r['block']:,} {r['last']:,.0f}/s, last/first "
              f"{r['last_vs_first']:.2f} (target >= 0.80: {_verdict(ok)}); per CPU second "
              f"last/first {r['cpu_last_vs_first']:.2f}; the process grew "
              f"{r['rss_growth'] / 1e6:.0f} MB")  # fmt: skip
        print("    every block, per second: " + ", ".join(f"{x:,.0f}" for x in r["rates"]))
        print("    every block, per CPU second: " + ", ".join(f"{x:,.0f}" for x in r["cpu_rates"]))
    if missed:
        print("missed: " + ", ".join(missed))
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
