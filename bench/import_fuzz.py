"""Fuzz soak for `ctxview import`: many broken transcripts (tests/import_fuzz.py: truncation,
byte flips, wrong types for every field, invalid UTF-8, NUL, deep nesting, duplicate uuids,
reordering, CRLF, BOM, odd lines), each imported by the real command before a good file; prints
the cases that crashed, called the store damaged, or lost the good file. The suite runs 200.

    .venv/bin/python bench/import_fuzz.py                    # 3,000 cases, seed 1
    .venv/bin/python bench/import_fuzz.py --cases 20000 --seed 7
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from import_fuzz import cases, good_events, run_case  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    sys.setrecursionlimit(3000)
    t0 = time.monotonic()
    failures = 0
    seen: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        expected = good_events(work)
        for n, (name, data) in enumerate(cases(args.seed, args.cases), 1):
            got = run_case(work, name, data, expected)
            if not got.ok:
                failures += 1
                key = got.why.strip().splitlines()[-1][:120] if got.why.strip() else got.why
                if key not in seen:
                    seen.add(key)
                    print(f"--- {got.case}\n{got.why[-1200:]}", flush=True)
            if n % 500 == 0:
                print(f"{n} cases, {failures} failures, {time.monotonic() - t0:.0f} s", flush=True)
    print(f"{args.cases} cases, {failures} failures, {time.monotonic() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
