"""Claude Code's own request records (issue 13): what they cost in the store and at import.

    .venv/bin/python bench/bench_requests.py                 # 50 and 200 turns (~3-6 minutes)
    .venv/bin/python bench/bench_requests.py --turns 20 --keep /tmp/out

The pinned Claude Code (tests/agents/claude, `npm ci` there) runs headless against the scripted
Messages API (tests/agents/fake_anthropic.py) for N turns (each a Read or a Bash, then a final
answer), so its transcript carries N+1 `api-request` records with their shapes and blobs; the
server keeps every body it was sent. Then, for each N:

- the sizes: every request as sent (its JSON: system, tools, messages, params) summed over the
  session, against what the store keeps for them after `ctxview import`: api_shapes,
  api_blobs (each distinct message once) and api_requests (keep, tail hashes, params, cache
  marks, usage), as the bytes of their columns; per request and in all;
- the import: `ctxview import FILE` into a fresh store, a fresh process each time (median of 3),
  its wall time and the file's MB/s; and the same transcript with the request records taken out,
  to show what the records add.

The machine is shared while others work: figures are noisy.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ROOT / "tests" / "agents"
sys.path.insert(0, str(AGENTS))

from claude_helpers import CLAUDE, CTXVIEW, Project  # noqa: E402
from fake_anthropic import FakeAnthropic  # noqa: E402

REQUEST_KINDS = ("api-request", "api-request-shape", "api-request-blob")


def record(tmp: Path, turns: int) -> tuple[Path, list[dict[str, Any]]]:
    """One headless Claude Code session of `turns` tool calls and a final answer: its transcript
    and the request bodies the scripted server received."""
    p = Project(tmp / "proj", tmp / "home", tmp / "state" / "store.db")
    p.root.mkdir(parents=True)
    p.home.mkdir(parents=True)
    for i in range(turns):  # files of their own, so each Read's result is a new message
        (p.root / f"f{i}.txt").write_text("".join(f"file {i} line {k}\n" for k in range(20)))
    steps: list[dict[str, Any]] = []
    for i in range(turns):
        if i % 2:
            steps.append({"tool": "Bash", "input": {"command": f"seq {i} {i + 30}",
                                                    "description": "count"}})  # fmt: skip
        else:
            steps.append({"tool": "Read", "input": {"file_path": str(p.root / f"f{i}.txt")}})
    steps.append({"text": "All done."})
    with FakeAnthropic(steps) as server:
        done = subprocess.run(
            [str(CLAUDE), "-p", "work through the files", "--output-format", "json",
             "--allowedTools", "Read,Bash"],
            cwd=p.root, env=p.env(server.url), capture_output=True, text=True,
            timeout=60 + 5 * turns,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"Claude Code failed: {done.stderr[-2000:]}")
        sid = json.loads(done.stdout)["session_id"]
        sent = list(server.requests)
    [path] = list((p.home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
    return path, sent


def without_records(path: Path, out: Path) -> Path:
    lines = [ln for ln in path.read_text().splitlines(keepends=True)
             if json.loads(ln).get("type") not in REQUEST_KINDS]  # fmt: skip
    out.write_text("".join(lines))
    return out


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def import_once(path: Path, store: Path) -> tuple[float, float]:
    """`ctxview import` into a fresh store: (wall, CPU) seconds of the whole command."""
    if store.parent.exists():
        shutil.rmtree(store.parent)
    store.parent.mkdir(parents=True)
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run([str(CTXVIEW), "--store", str(store), "import", str(path)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ctxview import failed: {done.stderr[-2000:]}")
    return took, _children_cpu() - cpu


IN_PROCESS = """
import asyncio, sys, time
from ctxview.importers.runner import import_file
from ctxview.store import Writer

async def main():
    writer = await Writer.open(sys.argv[1])
    started, cpu = time.perf_counter(), time.process_time()
    await import_file(writer, sys.argv[2])
    await writer.close()
    print(time.perf_counter() - started, time.process_time() - cpu)

asyncio.run(main())
"""


def import_in_process(path: Path, store: Path) -> tuple[float, float]:
    """The import alone (the writer's open to its close), in a fresh process: what a long
    `follow` or a batch of files pays, without the interpreter's start."""
    if store.parent.exists():
        shutil.rmtree(store.parent)
    store.parent.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, str(store), str(path)],
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def stored_bytes(store: Path) -> dict[str, int]:
    """The bytes of the request tables' columns (their payload, SQLite's pages aside)."""
    conn = sqlite3.connect(store)
    try:
        out = {}
        for table in ("api_shapes", "api_blobs", "api_requests"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            expr = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in cols)
            out[table] = int(conn.execute(f"SELECT coalesce(sum({expr}), 0) FROM {table}")
                             .fetchone()[0])  # fmt: skip
        out["requests"] = int(conn.execute("SELECT count(*) FROM api_requests").fetchone()[0])
        out["blobs"] = int(conn.execute("SELECT count(*) FROM api_blobs").fetchone()[0])
        return out
    finally:
        conn.close()


def bench(turns: int, tmp: Path, repeat: int) -> dict[str, Any]:
    started = time.perf_counter()
    path, sent = record(tmp / f"run{turns}", turns)
    recorded_in = time.perf_counter() - started
    store = tmp / f"store{turns}" / "store.db"
    with_records = [import_once(path, store) for _ in range(repeat)]
    inner = [import_in_process(path, store) for _ in range(repeat)]
    sizes = stored_bytes(store)
    bare = without_records(path, tmp / f"bare{turns}.jsonl")
    bare_store = tmp / f"bare_store{turns}" / "store.db"
    without = [import_once(bare, bare_store) for _ in range(repeat)]
    bare_inner = [import_in_process(bare, bare_store) for _ in range(repeat)]
    # What went over the wire: each request's body as JSON (the summary/title side requests of
    # Claude Code, which it records none of, left out).
    main = [b for b in sent if b.get("tools")]
    wire = sum(len(json.dumps(b, separators=(",", ":")).encode()) for b in main)
    stored = sizes["api_shapes"] + sizes["api_blobs"] + sizes["api_requests"]
    return {
        "turns": turns, "recorded_s": recorded_in, "file_bytes": path.stat().st_size,
        "bare_bytes": bare.stat().st_size, "requests": sizes["requests"], "sent": len(main),
        "blobs": sizes["blobs"], "wire": wire, "stored": stored, "sizes": sizes,
        "import_s": statistics.median(w for w, _ in with_records),
        "import_cpu": statistics.median(c for _, c in with_records),
        "bare_s": statistics.median(w for w, _ in without),
        "bare_cpu": statistics.median(c for _, c in without),
        "inner_s": statistics.median(w for w, _ in inner),
        "inner_cpu": statistics.median(c for _, c in inner),
        "bare_inner_s": statistics.median(w for w, _ in bare_inner),
        "bare_inner_cpu": statistics.median(c for _, c in bare_inner),
    }  # fmt: skip


def report(r: dict[str, Any]) -> None:
    n = max(r["requests"], 1)
    mb = r["file_bytes"] / 1e6
    bare_mb = r["bare_bytes"] / 1e6
    print(f"\n{r['turns']} turns: Claude Code sent {r['sent']} requests (recorded "
          f"{r['requests']}, {r['recorded_s']:.0f} s to run); transcript {mb:.2f} MB, "
          f"{r['bare_bytes'] / 1e6:.2f} MB of it without the request records")  # fmt: skip
    s = r["sizes"]
    print(f"  as sent: {r['wire'] / 1e6:.2f} MB in all, {r['wire'] / n / 1e3:.1f} kB a request")
    print(f"  stored:  {r['stored'] / 1e6:.3f} MB in all, {r['stored'] / n / 1e3:.2f} kB a request"
          f" (shapes {s['api_shapes'] / 1e3:.1f} kB once, {r['blobs']} blobs "
          f"{s['api_blobs'] / 1e3:.1f} kB, request rows {s['api_requests'] / n:.0f} B each)"
          f"; {r['wire'] / max(r['stored'], 1):.0f}x smaller")  # fmt: skip
    print(f"  `ctxview import`: {r['import_s']:.2f} s wall, {r['import_cpu']:.2f} s CPU "
          f"({mb / r['import_s']:.1f} MB/s of wall); without the records {r['bare_s']:.2f} s "
          f"wall, {r['bare_cpu']:.2f} s CPU")  # fmt: skip
    print(f"  the import alone (in process): {r['inner_s']:.3f} s wall, {r['inner_cpu']:.3f} s "
          f"CPU: {mb / r['inner_cpu']:.1f} MB/s and {r['requests'] / r['inner_cpu']:.0f} "
          f"requests/s of CPU; without the records {r['bare_inner_s']:.3f} s wall, "
          f"{r['bare_inner_cpu']:.3f} s CPU ({bare_mb / r['bare_inner_cpu']:.1f} MB/s)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, nargs="*", default=[50, 200])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="keep the temp folder here (transcripts, stores)")
    args = ap.parse_args()
    if not CLAUDE.exists():
        raise SystemExit("Claude Code is not installed: npm ci in tests/agents/claude")
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="ctxview-bench-requests-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        for turns in args.turns:
            report(bench(turns, tmp, args.repeat))
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
