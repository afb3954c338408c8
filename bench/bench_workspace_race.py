"""Issue 8 point 2: the workspace race, every tool, ten seconds (or --seconds) each.

    .venv/bin/python bench/bench_workspace_race.py                  # every case, both modes
    .venv/bin/python bench/bench_workspace_race.py --seconds 30 --only write --only read

A second process swaps ws/t.txt between a file and a symlink to ../outside/t.txt (file mode),
or ws/d between a folder and a symlink to ../outside (dir mode), while the engine runs the tool
on that path in a loop (tests/race_helpers.py). Prints calls, outside writes and outside reads
per case; exits 1 when any case wrote or read outside. The in-suite version is
tests/test_workspace_race.py, a few seconds per case.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from race_helpers import cases, race  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--only", action="append", help="a case (write, edit, read, ...)")
    parser.add_argument("--mode", action="append", choices=["file", "dir"])
    opts = parser.parse_args()
    bad = 0
    for mode in opts.mode or ["file", "dir"]:
        for case in cases(mode):
            if opts.only and case not in opts.only:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                figures = await race(Path(tmp), case, mode, opts.seconds)
            print(figures.line(), flush=True)
            bad += figures.outside_writes + figures.outside_reads
    print("FAIL" if bad else "OK: nothing written or read outside the workspace")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
