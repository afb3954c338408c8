"""A tiny test runner: every test_* function in tests/test_*.py, one case per `cases` entry.

    python3 run_tests.py       one dot per case, then the failures
    python3 run_tests.py -v    one line per case
"""

import importlib.util
import sys
import time
from pathlib import Path


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def collect():
    for path in sorted(Path("tests").glob("test_*.py")):
        module = load(path)
        for name, fn in vars(module).items():
            if name.startswith("test_") and callable(fn):
                for case in getattr(fn, "cases", [{}]):
                    label = "-".join(str(v) or "none" for v in case.values())
                    yield f"{path.as_posix()}::{name}" + (f"[{label}]" if label else ""), fn, case


def main(argv: list[str]) -> int:
    sys.path.insert(0, ".")
    verbose = "-v" in argv
    start = time.perf_counter()
    cases = list(collect())
    print(f"collected {len(cases)} cases")
    failed: list[tuple[str, str]] = []
    dots = ""
    for name, fn, case in cases:
        try:
            fn(**case)
            outcome, why = "ok", ""
        except AssertionError as exc:
            outcome, why = "FAILED", str(exc) or "assertion failed"
            failed.append((name, why))
        if verbose:
            print(f"{name} {outcome}")
            if why:
                print(f"    {why}")
        else:
            dots += "." if outcome == "ok" else "F"
            if len(dots) == 80:
                print(dots)
                dots = ""
    if dots:
        print(dots)
    took = time.perf_counter() - start
    if failed:
        print(f"{len(failed)} failed, {len(cases) - len(failed)} passed in {took:.2f}s")
        return 1
    print(f"{len(cases)} passed in {took:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
