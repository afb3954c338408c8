"""Export benchmark against issue 11's targets.

    .venv/bin/python bench/bench_export.py                 # everything
    .venv/bin/python bench/bench_export.py --only big|demo|compare

(big) the 100,000-result fixture of bench_viewer.py (built once, cached in the temp folder) to
      HTML, redaction on, in a fresh process: wall time and that process's peak RSS (os.wait4),
      the number of pages and their sizes. Targets: <= 20 s, <= 300 MB.
(demo) `ctxview demo --no-view --pace 0` into a fresh store, then its HTML export, in process
      (median of 5). Target: <= 1 s.
(compare) side by side in one run with claude-code-log (PyPI, its own venv under /tmp, as
      bench_import.py installs it) on the same real Claude Code files of ../shared/realdata,
      file by file, each side right after the other, a process per file and step:
        like for like, from the JSONL as claude-code-log starts: `ctxview export FILE.jsonl`
        (one process: a throwaway store, import, export), and `ctxview import` then
        `ctxview export` (two processes, into a fresh store);
        export only: `ctxview export` of the session the store already holds;
        `claude-code-log FILE -o OUT.html --no-cache`.
      Wall and CPU time (the children's, os.wait4) for each; the ratios of both. Target:
      like for like (`ctxview export FILE.jsonl`) <= 0.5x claude-code-log's time; CPU time is
      the figure that holds on a loaded machine (wall time counts other processes' turns).

(redact) redaction's precision (issue 16 §3.3), in process: the corpus of tests/export_corpus.py
      (ordinary things that look a little like secrets, three seeds) and the secrets planted in
      it; keys of no known prefix, generated at random, and how many entropy finds; and every
      transcript of ../shared/realdata (or --realdata DIR): every string of every record of each
      file as it is, and the same files imported and read as an export reads them. Words
      scanned, redactions by kind, false positives per 100,000 words, planted caught / total,
      and each redaction in the real files (shortened) to inspect. Target: <= 1 false positive
      per 100,000 words, every planted secret caught.

Prints its figures and a verdict per target; exits 1 with --strict when one is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_import  # noqa: E402  (claude-code-log's venv and the real files)
import bench_viewer  # noqa: E402  (the 100k fixture's builder)

CTXVIEW = [sys.executable, "-m", "ctxview.cli"]
missed: list[str] = []


def verdict(name: str, good: bool) -> str:
    if not good:
        missed.append(name)
    return "met" if good else "MISSED"


def run_measured(cmd: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout) of one child process. CPU time is
    what the figures mean on a busy machine (wall time counts the other processes' turns)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()[-500:]}")
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


# bench_viewer's builder, into a file of this bench's own (bench_viewer may be rebuilding its
# own at the same time).
bench_viewer.FIXTURE = Path(tempfile.gettempdir()) / "ctxview-bench-export" / "store.db"


def big(tmp: Path, rebuild: bool) -> None:
    store, stored_chars = bench_viewer.fixture(rebuild)
    print(f"(big) {bench_viewer.RESULTS:,} results, {stored_chars / 1e6:.0f} MB stored text; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    out = tmp / "big.html"
    took, cpu, rss, said = run_measured(
        [*CTXVIEW, "export", bench_viewer.SESSION, "--store", str(store), "-o", str(out)], ROOT
    )
    pages = sorted(tmp.glob("big.p*.html"))
    sizes = [p.stat().st_size for p in pages]
    print(f"  {said.strip()}")
    print(
        f"  time {took:.1f} s wall, {cpu:.1f} s CPU (target <= 20 s: "
        f"{verdict('big time', took <= 20)}); "
        f"peak RSS {rss:.0f} MB (target <= 300 MB: {verdict('big rss', rss <= 300)})"
    )
    if sizes:
        print(f"  {len(pages)} pages and an index of {out.stat().st_size / 1e3:.0f} kB; page "
              f"sizes {min(sizes) / 1e6:.1f}-{max(sizes) / 1e6:.1f} MB (median "
              f"{statistics.median(sizes) / 1e6:.1f}), {sum(sizes) / 1e6:.0f} MB in all")  # fmt: skip
    for p in [out, *pages]:
        p.unlink(missing_ok=True)


def demo(tmp: Path) -> None:
    from ctxview.export.redact import Redactor
    from ctxview.export.run import export_session
    from ctxview.export.source import Source

    store = tmp / "demo.db"
    subprocess.run([*CTXVIEW, "demo", "--no-view", "--pace", "0", "--store", str(store)],
                   check=True, capture_output=True, cwd=ROOT)  # fmt: skip
    times = []
    size = 0
    for _ in range(5):
        t = time.perf_counter()
        source = Source(store, Redactor())
        row = source.resolve(None)
        result = export_session(source, row.id, "html", tmp / "demo.html", 10_000_000)
        source.close()
        times.append(time.perf_counter() - t)
        size = sum(result.sizes)
    med = statistics.median(times)
    cli = []
    for _ in range(3):
        took, cpu, _, _ = run_measured([*CTXVIEW, "export", "--store", str(store), "-o",
                                        str(tmp / "demo-cli.html")], ROOT)  # fmt: skip
        cli.append((took, cpu))
    wall, cpu = min(cli)
    print(f"(demo) HTML export of the demo ({size / 1e3:.0f} kB): median {med * 1000:.0f} ms "
          f"of 5 in process (target <= 1 s: {verdict('demo', med <= 1.0)}); as the command, "
          f"Python's start-up included: {wall:.2f} s wall, {cpu:.2f} s CPU (best of 3)")  # fmt: skip


def _measured(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process; (nan, nan) when it failed (said on stdout)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"  {Path(cmd[0]).name} {' '.join(cmd[1:3])} failed: {err.strip()[-200:]}")
        return float("nan"), float("nan")
    return took, usage.ru_utime + usage.ru_stime


def compare(tmp: Path) -> None:
    files = bench_import.claude_sources()
    if not files:
        print("(compare) no real Claude Code files in ../shared/realdata: skipped")
        return
    total_mb = sum(f.stat().st_size for f in files) / 1e6
    ccl = bench_import.claude_code_log()
    version = "claude-code-log"
    if ccl is not None:
        version = subprocess.run([str(ccl), "--version"], capture_output=True,
                                 text=True).stdout.strip() or version  # fmt: skip
    load = os.getloadavg()[0]
    # step -> [wall, CPU] summed over the files
    sums: dict[str, list[float]] = {k: [0.0, 0.0] for k in ("oneshot", "import", "export", "ccl")}

    def add(step: str, figures: tuple[float, float]) -> None:
        sums[step][0] += figures[0]
        sums[step][1] += figures[1]

    for i, f in enumerate(files):
        add("oneshot", _measured([*CTXVIEW, "export", str(f), "-o", str(tmp / f"one-{i}.html")],
                                 ROOT))  # fmt: skip
        store = tmp / f"cmp-{i}.db"
        add("import", _measured([*CTXVIEW, "import", "--store", str(store), str(f)], ROOT))
        add("export", _measured([*CTXVIEW, "export", "--store", str(store), "-o",
                                 str(tmp / f"ours-{i}.html")], ROOT))  # fmt: skip
        if ccl is not None:
            add("ccl", _measured([str(ccl), str(f), "-o", str(tmp / f"theirs-{i}.html"),
                                  "--no-cache"], tmp, {**os.environ, "HOME": str(tmp)}))  # fmt: skip
    load = max(load, os.getloadavg()[0])
    two = [sums["import"][k] + sums["export"][k] for k in (0, 1)]
    print(f"(compare) {len(files)} real Claude Code files, {total_mb:.2f} MB; load "
          f"{os.getloadavg()[0]:.1f} (up to {load:.1f} while measured)")  # fmt: skip
    rows = [("ctxview export FILE.jsonl (import+export, 1 process)", sums["oneshot"]),
            ("ctxview import, then export (2 processes)", two),
            ("ctxview export only (the store holds the session)", sums["export"])]  # fmt: skip
    if ccl is None:
        for label, (wall, cpu) in rows:
            print(f"  {label:53} {wall:6.2f} s wall {cpu:6.2f} s CPU")
        print("  claude-code-log is not installed: no ratio")
        missed.append("compare (claude-code-log absent)")
        return
    wall_c, cpu_c = sums["ccl"]
    print(f"  {version + ' FILE -o OUT.html --no-cache':53} {wall_c:6.2f} s wall "
          f"{cpu_c:6.2f} s CPU")  # fmt: skip
    for label, (wall, cpu) in rows:
        print(f"  {label:53} {wall:6.2f} s wall {cpu:6.2f} s CPU: {wall / wall_c:.2f}x "
              f"its wall time, {cpu / cpu_c:.2f}x its CPU time")  # fmt: skip
    wall, cpu = sums["oneshot"]
    print(f"  like for like (from the JSONL, `ctxview export FILE.jsonl`): target <= 0.5x: "
          f"CPU {verdict('compare (CPU)', cpu / cpu_c <= 0.5)}, wall "
          f"{verdict('compare (wall)', wall / wall_c <= 0.5)}")  # fmt: skip


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _file_strings(path: Path) -> list[str]:
    """Every string a transcript file holds: JSON records' strings (keys too), a Markdown
    history's text, a SQLite database's text columns."""
    import json
    import sqlite3

    if path.suffix == ".jsonl":
        out: list[str] = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.extend(_strings(json.loads(line)))
            except ValueError:
                out.append(line)
        return out
    if path.suffix == ".json":
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            return list(_strings(json.loads(text)))
        except ValueError:
            return [text]
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8", errors="replace")]
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [v for t in tables for row in conn.execute(f'SELECT * FROM "{t}"')
                for v in row if isinstance(v, str)]  # fmt: skip
    finally:
        conn.close()


def _short(value: str) -> str:
    flat = value.replace("\n", "⏎")
    return f"{flat[:10]}… ({len(value)} chars)" if len(flat) > 14 else flat


def redact(tmp: Path, realdata: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from collections import Counter

    import export_corpus

    from ctxview.export.redact import Redactor
    from ctxview.export.source import Source

    print(f"(redact) load {os.getloadavg()[0]:.1f}", flush=True)
    words = 0
    false: Counter[str] = Counter()
    by_category: Counter[str] = Counter()
    examples: list[str] = []
    t = time.perf_counter()
    for seed in (16, 17, 18):
        docs = export_corpus.ordinary(seed=seed, documents=300)
        words += export_corpus.word_count(docs)
        for category, texts in docs.items():
            r = Redactor(seen=lambda kind, value: examples.append(f"{kind}: {value[:60]!r}"))
            for text in texts:
                r.text(text)
            false.update(r.counts)
            by_category[category] += sum(r.counts.values())
    per = sum(false.values()) * 1e5 / words
    print(f"  corpus (tests/export_corpus.py, seeds 16-18, 300 documents a category): {words:,} "
          f"words in {time.perf_counter() - t:.1f} s; false positives {sum(false.values())} "
          f"({per:.2f} per 100,000 words; target <= 1: {verdict('corpus precision', per <= 1)})"
          f"{', by kind ' + str(dict(false)) if false else ''}")  # fmt: skip
    print("    by category: " + ", ".join(f"{c} {n}" for c, n in by_category.items()))
    for e in examples[:10]:
        print(f"    {e}")
    caught = total = 0
    kinds: Counter[str] = Counter()
    for seed in (16, 17, 18):
        for kind, text, secret in export_corpus.planted(seed=seed, each=12):
            total += 1
            out = Redactor().text(text) or ""
            flat = out.replace("\n", "")
            if not any(secret[i : i + 12] in flat for i in range(max(1, len(secret) - 11))):
                caught += 1
            else:
                kinds[kind] += 1
    planted_kinds = len({k for k, _, _ in export_corpus.planted(each=1)})
    print(f"  planted: {caught} of {total} caught, {planted_kinds} kinds (target all: "
          f"{verdict('planted', caught == total)})"
          f"{', missed ' + str(dict(kinds)) if kinds else ''}")  # fmt: skip
    _generic(export_corpus)
    _realdata(tmp, realdata, Redactor, Source)


def _generic(export_corpus: Any) -> None:
    """Keys with no known prefix, random, 10,000 of each shape: found by entropy alone."""
    import base64
    import random
    import string

    from ctxview.export.redact import Redactor

    rng = random.Random(1)
    alnum = string.ascii_letters + string.digits
    shapes = {"24 base64": lambda: export_corpus.rand(rng, alnum + "+/", 24),
              "32 letters and digits": lambda: export_corpus.rand(rng, alnum, 32),
              "40 base64": lambda: export_corpus.rand(rng, alnum + "+/", 40),
              "43 base64url (32 bytes)": lambda: base64.urlsafe_b64encode(
                  rng.randbytes(32)).decode().rstrip("="),
              "64 letters and digits": lambda: export_corpus.rand(rng, alnum, 64)}  # fmt: skip
    figures = []
    n = 10_000
    for name, make in shapes.items():
        hits = 0
        for _ in range(n):
            r = Redactor()
            r.text(f"value {make()} end")
            hits += bool(r.counts)
        figures.append(f"{name} {hits * 100 / n:.2f} %")
    print(
        f"  random keys with no prefix, {n:,} of each, found by entropy alone: "
        + ", ".join(figures)
    )


def _realdata(tmp: Path, realdata: Path, redactor: Any, source: Any) -> None:
    from collections import Counter

    files = sorted(p for p in realdata.rglob("*") if p.is_file()
                   and p.suffix in (".jsonl", ".json", ".md", ".db"))  # fmt: skip
    if not files:
        print(f"  real transcripts: none in {realdata}: skipped")
        return
    found: list[tuple[str, str, str]] = []
    words = 0
    t = time.perf_counter()
    for path in files:
        name = str(path.relative_to(realdata))
        r = redactor(seen=lambda kind, value, n=name: found.append((kind, value, n)))
        for text in _file_strings(path):
            words += len(text.split())
            r.text(text)
    kinds = Counter(k for k, _, _ in found)
    print(f"  real transcripts ({realdata}, {len(files)} files as they are, every string): "
          f"{words:,} words in {time.perf_counter() - t:.1f} s; {len(found)} redactions "
          f"({len(found) * 1e5 / words:.2f} per 100,000 words){', ' + str(dict(kinds)) if kinds else ''}")  # fmt: skip
    for (kind, value, name), n in Counter(found).most_common():
        print(f"    {n:3} x {kind}: {_short(value)} in {name}")
    store = tmp / "realdata.db"
    subprocess.run([*CTXVIEW, "import", "--store", str(store), str(realdata)],
                   capture_output=True, cwd=ROOT)  # fmt: skip
    if not store.exists():
        return
    seen: list[tuple[str, str]] = []
    r = redactor(seen=lambda kind, value: seen.append((kind, value)))
    src = source(store, r)
    words = 0
    for row in src.sessions():
        for item in src.items(row.id, stored=True):
            ev = item.event
            for text in (ev.text, ev.args, ev.data, item.shown, item.stored):
                words += len(text.split()) if text else 0
    src.close()
    print(f"  the same imported, as an export reads them (every session's texts, calls, "
          f"data, bodies): {words:,} words, {len(seen)} redactions "
          f"({len(seen) * 1e5 / max(words, 1):.2f} per 100,000 words)"
          f"{', ' + str(dict(Counter(k for k, _ in seen))) if seen else ''}")  # fmt: skip
    for (kind, value), n in Counter(seen).most_common():
        print(f"    {n:3} x {kind}: {_short(value)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("big", "demo", "compare", "redact"))
    ap.add_argument("--realdata", type=Path, default=bench_import.REALDATA,
                    help="the real transcripts (default ../shared/realdata)")  # fmt: skip
    ap.add_argument("--rebuild", action="store_true", help="build the 100k fixture again")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxview-bench-export-") as d:
        tmp = Path(d)
        if args.only in (None, "demo"):
            demo(tmp)
        if args.only in (None, "compare"):
            compare(tmp)
        if args.only in (None, "redact"):
            redact(tmp, args.realdata)
        if args.only in (None, "big"):
            big(tmp, args.rebuild)
    if missed:
        print(f"missed: {', '.join(missed)}")
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
