"""Growth of every real transcript (issue 8, point 1): each file of ../shared/realdata imported in
parts, cut at line boundaries (among them the probe's: after line 9 of a Codex rollout, after
line 263 of a Claude Code session) and in the middle of a line, equals its clean import: every
session, event and body. Skipped when ../shared/realdata is absent. Every cut of every file is
bench/import_growth.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from import_compare import grown, line_ends
from realdata import REALDATA, imported_transcripts

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not here"),
]


transcripts = imported_transcripts


def cuts_for(data: bytes) -> list[list[int]]:
    """A few ways to cut the file: after its first line (nothing says whose session it is yet,
    in some), after line 9 and line 263, in three parts, and in the middle of a line."""
    ends = line_ends(data)
    n = len(ends)
    picks = [[ends[0]]]
    for line in (9, 263):
        if line < n:
            picks.append([ends[line - 1]])
    if n >= 3:
        picks.append([ends[n // 3 - 1], ends[2 * n // 3 - 1]])
    if n >= 2:
        i = n // 2
        picks.append([ends[i - 1] + (ends[i] - ends[i - 1]) // 2])
    return picks


@pytest.mark.parametrize("path", transcripts(), ids=lambda p: str(p.relative_to(REALDATA)))
async def test_a_real_transcript_grown_equals_its_clean_import(tmp_path: Path, path: Path) -> None:
    data = path.read_bytes()
    for cuts in cuts_for(data):
        diff = await grown(data, cuts, tmp_path, path.name)
        assert not diff, (cuts, diff)
