"""Issue 8 point 2: no tool reaches outside the workspace while another process swaps a path
between a file (or a folder) inside and a symlink to outside. Two seconds per case here; ten
or more per case in bench/bench_workspace_race.py. Before the fix (check, then reopen by name)
every edit tool wrote outside within a second or two, and read, grep and glob leaked."""

from __future__ import annotations

from pathlib import Path

import pytest
from race_helpers import cases, race

SECONDS = 2.0
CASES = [(mode, case) for mode in ("file", "dir") for case in cases(mode)]


@pytest.mark.parametrize(("mode", "case"), CASES, ids=[f"{m}-{c}" for m, c in CASES])
async def test_nothing_outside_is_written_or_read(tmp_path: Path, mode: str, case: str) -> None:
    figures = await race(tmp_path, case, mode, SECONDS)
    assert figures.calls > 20, figures.line()  # the race ran
    assert (figures.outside_writes, figures.outside_reads) == (0, 0), figures.line()
