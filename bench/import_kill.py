"""Kill soak: `ctxview import` and `ctxview follow` SIGKILLed at random moments, many rounds, on
a bigger transcript (built from ../shared/realdata when present, else from our fixtures), each
store compared whole with one clean import (tests/import_kill.py does the work; the suite runs
10 rounds of each on small files).

    .venv/bin/python bench/import_kill.py                      # 40 rounds each, 20 MB
    .venv/bin/python bench/import_kill.py --rounds 100 --megabytes 50 --seed 3
    .venv/bin/python bench/import_kill.py --only import        # or --only follow
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from import_kill import build, kill_follow, kill_import  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--megabytes", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=["import", "follow"])
    args = ap.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "big.jsonl"
        size = build(source, args.megabytes, seed=args.seed)
        print(f"transcript: {size / 1e6:.1f} MB")
        for what, run in (("import", kill_import), ("follow", kill_follow)):
            if args.only and args.only != what:
                continue
            t0 = time.monotonic()
            got = run(work, source, args.rounds, args.seed)
            dup = got.killed_counts.get("events", 0) - got.clean_counts.get("events", 0)
            print(
                f"{what}: {got.rounds} kill rounds ({got.mid_import} with work left), clean "
                f"import {got.clean_seconds:.1f} s; events {got.killed_counts.get('events')} vs "
                f"{got.clean_counts.get('events')} clean ({dup:+d}); "
                f"{'identical' if not got.differences else 'DIFFERENT'} "
                f"({time.monotonic() - t0:.0f} s)",
                flush=True,
            )
            for line in got.differences[:3]:
                print(f"  {line}")
            failed = failed or bool(got.differences)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
