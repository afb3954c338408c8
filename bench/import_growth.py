"""Growth sweep: every real transcript of ../shared/realdata, cut after every line (and in the
middle of lines), imported in two parts, compared whole with one clean import of the file.

    .venv/bin/python bench/import_growth.py                 # every cut of every file
    .venv/bin/python bench/import_growth.py --every 7       # every 7th line boundary
    .venv/bin/python bench/import_growth.py --parts 4       # in 4 parts instead of 2

The in-suite version (tests/test_import_resume.py) takes a few cuts per file; this takes them all.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from import_compare import grown, line_ends  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"


def transcripts() -> list[Path]:
    return sorted(REALDATA.rglob("*.jsonl"), key=lambda p: (p.name.startswith("agent-"), str(p)))


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1, help="take every Nth line boundary")
    ap.add_argument("--parts", type=int, default=2)
    ap.add_argument("--only", help="a substring of the file's path")
    args = ap.parse_args()
    if not REALDATA.is_dir():
        print(f"{REALDATA} is absent: nothing to sweep.")
        return 0
    failures = cases = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for src in transcripts():
            if args.only and args.only not in str(src):
                continue
            data = src.read_bytes()
            ends = line_ends(data)
            bad: list[str] = []
            for i in range(0, len(ends) - 1, args.every):
                step = max(1, (len(ends) - i) // args.parts)
                cuts = [ends[min(i + k * step, len(ends) - 1)] for k in range(args.parts - 1)]
                mid = ends[i] + (ends[i + 1] - ends[i]) // 2  # in the middle of the next line
                for case in (cuts, [*cuts[:-1], mid]):
                    cases += 1
                    diff = await grown(data, case, Path(tmp) / "w", src.name)
                    if diff:
                        failures += 1
                        bad.append(f"  cut {case} (line {i + 1}): {diff[0]}")
            rel = src.relative_to(REALDATA)
            print(f"{rel}: {len(ends)} lines, {len(bad)} failing cuts", flush=True)
            for line in bad[:3]:
                print(line)
    print(f"{cases} cases, {failures} failures, {time.monotonic() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
