"""A fuzzer over real transcripts (../shared/realdata, when present) and our fixtures finds no
traceback in `ctxview import` (issue 8, point 5): truncation, byte flips, wrong types, invalid
UTF-8, NUL, deep nesting, duplicate uuids, reordering, CRLF, BOM, odd lines; a fixed seed and a
fixed count (bench/import_fuzz.py runs thousands). The probe's own lines are
test_import_bad_lines.py."""

from __future__ import annotations

from pathlib import Path

from import_fuzz import fuzz


def test_fuzzed_transcripts_never_crash_the_import(tmp_path: Path) -> None:
    """A fixed seed and a fixed count: each case is a broken transcript then a good one, imported
    by the command; zero tracebacks, zero 'damaged', the good file imported whole every time."""
    outcomes = fuzz(tmp_path, seed=8, count=200)
    failed = [o for o in outcomes if not o.ok]
    assert len(outcomes) == 200
    assert not failed, "\n\n".join(f"{o.case}:\n{o.why}" for o in failed[:3])
