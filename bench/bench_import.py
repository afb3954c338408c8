"""Import benchmark: throughput, memory flat in the file's size, claude-code-log side by side,
and follow latency.

    .venv/bin/python bench/bench_import.py            # everything (about 2-3 minutes)
    .venv/bin/python bench/bench_import.py --only throughput|compare|follow

1. Throughput: a large Claude Code JSONL is built in a temp dir from the real transcripts of
   ../shared/realdata (every record rewritten with fresh uuids, message and tool ids per copy) at
   two sizes; each is imported by a fresh process (`ctxview import`'s code path: one batched
   import), which reports its wall time and peak RSS. Target: >= 20 MB/s, peak RSS about the same
   at both sizes.
2. Side by side on the real Claude Code transcripts: `ctxview import FILE` against
   `claude-code-log FILE -o OUT.html --no-cache`, each run as a subprocess per file (interpreter
   start-up counted on both sides). claude-code-log is installed from PyPI into its own venv
   under /tmp (it needs Python >= 3.12), never into the project's.
3. Follow latency: `ctxview follow` runs on a 50 MB transcript; a line is appended ~20 times and
   the time until its event is in the store is measured (median, p95). Target: <= 300 ms.

The machine is shared while others work: figures are noisy; run it again on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDATA = ROOT.parent / "shared" / "realdata"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import import_kill  # noqa: E402

CCL_VENV = Path("/tmp/ctxview-bench-claude-code-log")


def claude_sources() -> list[Path]:
    """The real Claude Code session files (sub-agent files left out: they are sessions of
    their own)."""
    return import_kill.claude_sources(fixtures=False)


def build(target: Path, megabytes: int) -> int:
    """Rewritten copies of the real records (fresh uuids, message and tool ids per copy) until
    the file is `megabytes` big: tests/import_kill.py's, without our fixtures."""
    return import_kill.build(target, megabytes, seed=1, fixtures=False)


# 1. Throughput and memory (each size in its own process, so peak RSS is that import's)


def child_import(path: str, store: str) -> None:
    from ctxview.importers.runner import import_file
    from ctxview.store import Writer

    async def run() -> dict[str, float]:
        writer = await Writer.open(store)
        t = time.perf_counter()
        try:
            async with writer.batch():
                report = await import_file(writer, path)
        finally:
            await writer.close()
        return {"seconds": time.perf_counter() - t, "lines": report.lines,
                "problems": len(report.problems)}  # fmt: skip

    out = asyncio.run(run())
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["cpu_seconds"] = time.process_time()
    print(json.dumps(out))


def throughput(tmp: Path, sizes: list[int]) -> list[dict[str, float]]:
    rows = []
    for mb in sizes:
        src = tmp / f"big-{mb}.jsonl"
        nbytes = build(src, mb)
        store = tmp / f"big-{mb}.db"
        run = subprocess.run([sys.executable, __file__, "--child", str(src), str(store)],
                             capture_output=True, text=True, check=True)  # fmt: skip
        r = json.loads(run.stdout.strip().splitlines()[-1])
        r["mb"] = nbytes / 1e6
        r["mb_per_s"] = r["mb"] / r["seconds"]
        rows.append(r)
        print(f"  {r['mb']:6.1f} MB  {r['lines']:7d} lines  {r['seconds']:6.2f} s  "
              f"{r['mb_per_s']:5.1f} MB/s  (CPU {r['cpu_seconds']:.1f} s)  peak RSS "
              f"{r['rss_mb']:.0f} MB  skipped {r['problems']}", flush=True)  # fmt: skip
        src.unlink()
        for p in tmp.glob(f"big-{mb}.db*"):
            p.unlink()
    return rows


# 2. Side by side with claude-code-log


def python312() -> str | None:
    """A Python >= 3.12 that runs (a pyenv shim may name one that is not enabled)."""
    candidates = [shutil.which("python3.13"), shutil.which("python3.12"),
                  *sorted(map(str, Path("~/.pyenv/versions").expanduser().glob("3.1[2-9]*/bin/python")))]  # fmt: skip
    for py in filter(None, candidates):
        ok = subprocess.run([py, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                            capture_output=True)  # fmt: skip
        if ok.returncode == 0:
            return py
    return None


def claude_code_log() -> Path | None:
    exe = CCL_VENV / "bin" / "claude-code-log"
    if exe.exists():
        return exe
    py = python312()
    if py is None:
        print("  claude-code-log needs Python >= 3.12, which is not on this machine.")
        return None
    try:
        subprocess.run([py, "-m", "venv", str(CCL_VENV)], check=True, capture_output=True)
        subprocess.run([str(CCL_VENV / "bin" / "pip"), "install", "-q", "claude-code-log"],
                       check=True, capture_output=True, timeout=600)  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        print(f"  claude-code-log could not be installed from PyPI: {exc}.")
        return None
    return exe if exe.exists() else None


def compare(tmp: Path) -> None:
    files = claude_sources()
    total_mb = sum(f.stat().st_size for f in files) / 1e6
    ccl = claude_code_log()
    store = tmp / "compare.db"
    ours = 0.0
    for f in files:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ctxview.cli", "import", "--store", str(store),
                        str(f)], check=True, capture_output=True, cwd=ROOT)  # fmt: skip
        ours += time.perf_counter() - t
    print(f"  ctxview import      {len(files)} files, {total_mb:.2f} MB: {ours:6.2f} s "
          f"({total_mb / ours:.2f} MB/s, a process per file)", flush=True)  # fmt: skip
    if ccl is None:
        return
    theirs = 0.0
    version = subprocess.run([str(ccl), "--version"], capture_output=True, text=True).stdout.strip()
    for i, f in enumerate(files):
        t = time.perf_counter()
        run = subprocess.run([str(ccl), str(f), "-o", str(tmp / f"out-{i}.html"), "--no-cache"],
                             capture_output=True, text=True, cwd=tmp,
                             env={**os.environ, "HOME": str(tmp)})  # fmt: skip
        theirs += time.perf_counter() - t
        if run.returncode != 0:
            print(f"  claude-code-log failed on {f.name}: {run.stderr.strip()[-200:]}")
    print(f"  {version:19} {len(files)} files, {total_mb:.2f} MB: {theirs:6.2f} s "
          f"({total_mb / theirs:.2f} MB/s, a process per file, to HTML)")  # fmt: skip
    print(f"  ratio: claude-code-log takes {theirs / ours:.1f}x the time of ctxview import")


# 3. Follow latency


def follow_latency(tmp: Path, megabytes: int, appends: int) -> None:
    src = tmp / "follow.jsonl"
    build(src, megabytes)
    store = tmp / "follow.db"
    sid = None
    first = src.open("rb").readline()
    rec = json.loads(first)
    session = rec.get("sessionId") or next(
        json.loads(line)["sessionId"] for line in src.open("rb") if b'"sessionId"' in line
    )
    sid = f"cc-{session}"
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ctxview.cli", "follow", "--store", str(store),
                             str(src)], cwd=ROOT, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        asyncio.run(_measure(proc, src, store, sid, appends, t0))
    finally:
        proc.send_signal(2)
        proc.wait(timeout=20)


async def _measure(proc: subprocess.Popen[str], src: Path, store: Path, sid: str, appends: int,
                   t0: float) -> None:  # fmt: skip
    from ctxview.store import Reader

    assert proc.stderr is not None
    proc.stderr.readline()  # "Following …"
    proc.stderr.readline()  # the first batch: the whole file
    print(f"  initial import of the file by follow: {time.perf_counter() - t0:.1f} s", flush=True)
    reader = await Reader.open(store)
    lat = []
    try:
        last = await reader.last_seq(sid)
        for i in range(appends):
            marker = f"latency-marker-{i}-{uuid.uuid4().hex[:6]}"
            line = json.dumps({"type": "user", "uuid": str(uuid.uuid4()), "parentUuid": None,
                               "sessionId": sid[3:], "timestamp": "2026-01-01T00:00:00.000Z",
                               "message": {"role": "user", "content": marker}})  # fmt: skip
            t = time.perf_counter()
            with open(src, "a", encoding="utf-8") as f:
                f.write(line + "\n")
            while True:
                evs = await reader.events(sid, after=last)
                hit = [e for e in evs if e.text == marker]
                if hit:
                    lat.append((time.perf_counter() - t) * 1000)
                    last = hit[-1].seq
                    break
                if time.perf_counter() - t > 10:
                    lat.append(10_000.0)
                    break
                await asyncio.sleep(0.002)
            await asyncio.sleep(0.2)
    finally:
        await reader.close()
    lat.sort()
    p95 = lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))]
    print(f"  {len(lat)} appends to a {src.stat().st_size / 1e6:.0f} MB transcript: median "
          f"{statistics.median(lat):.0f} ms, p95 {p95:.0f} ms, max {lat[-1]:.0f} ms")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, metavar=("FILE", "STORE"), help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=["throughput", "compare", "follow"])
    ap.add_argument("--sizes", default="50,100", help="MB, comma-separated (default 50,100)")
    ap.add_argument("--follow-mb", type=int, default=50)
    ap.add_argument("--appends", type=int, default=20)
    args = ap.parse_args()
    if args.child:
        child_import(*args.child)
        return 0
    if not REALDATA.is_dir():
        print("../shared/realdata is not here: nothing to build the benchmark from.")
        return 0
    with tempfile.TemporaryDirectory(prefix="ctxview-bench-") as d:
        tmp = Path(d)
        if args.only in (None, "throughput"):
            print("Import throughput (Claude Code JSONL built from the real records):")
            throughput(tmp, [int(s) for s in args.sizes.split(",")])
        if args.only in (None, "compare"):
            print("Side by side on the real Claude Code transcripts of ../shared/realdata:")
            compare(tmp)
        if args.only in (None, "follow"):
            print("Follow latency:")
            follow_latency(tmp, args.follow_mb, args.appends)
    return 0


if __name__ == "__main__":
    sys.exit(main())
