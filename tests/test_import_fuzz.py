"""A fuzzer over real transcripts (../shared/realdata, when present) and our fixtures finds no
traceback in `ctxview import` (issue 8, point 5): truncation, byte flips, wrong types, invalid
UTF-8, NUL, deep nesting, duplicate uuids, reordering, CRLF, BOM, odd lines; a fixed seed and a
fixed count (bench/import_fuzz.py runs thousands). The probe's own lines are
test_import_bad_lines.py."""

from __future__ import annotations

from pathlib import Path

from import_fuzz import depth_cases, follow_case, fuzz, good_events, run_case, run_import, sources


def test_fuzzed_transcripts_never_crash_the_import(tmp_path: Path) -> None:
    """A fixed seed and a fixed count: each case is a broken transcript then a good one, imported
    by the command; zero tracebacks, zero 'damaged', the good file imported whole every time."""
    outcomes = fuzz(tmp_path, seed=8, count=200)
    failed = [o for o in outcomes if not o.ok]
    assert len(outcomes) == 200
    assert not failed, "\n\n".join(f"{o.case}:\n{o.why}" for o in failed[:3])


def test_every_depth_at_every_place_is_skipped_and_listed_never_a_traceback(tmp_path: Path) -> None:
    """Nesting 150 to 100,000 levels deep, in turn at each place of each record of our fixtures
    (a tool call's input, its result, a message, Codex's call arguments) and in a last call left
    open: `import` and `follow` (a growing file, the parser's provisional state at each end)
    never raise; a record past 200 levels is skipped and listed with its file and line."""
    expected = good_events(tmp_path)
    files = [p for p in sources() if "fixtures" in str(p)]
    cases = list(depth_cases(files))
    for name, data in cases:
        outcome = run_case(tmp_path, name, data, expected)
        assert outcome.ok, f"{outcome.case}:\n{outcome.why}"
        outcome = follow_case(tmp_path, name, data)
        assert outcome.ok, f"{outcome.case} (follow):\n{outcome.why}"
    for name, data in cases:
        if "depth 150" in name:
            continue
        (tmp_path / "listed.jsonl").write_bytes(data)
        _, err = run_import(tmp_path / "listed.db", tmp_path / "listed.jsonl")
        assert "listed.jsonl:" in err and "nested deeper than 200 levels: skipped" in err, name
