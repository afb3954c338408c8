"""SIGKILL at random moments never duplicates or loses (issue 8, point 1): real `ctxview import`
and `ctxview follow` processes are killed (10 rounds each, a fixed seed), run again to the end,
and the store is compared whole with one clean import: every count, every event, every body.
A longer run is bench/import_kill.py."""

from __future__ import annotations

from pathlib import Path

from import_kill import build, kill_follow, kill_import

ROUNDS = 10


def test_import_killed_at_random_moments_then_rerun_equals_one_clean_import(
    tmp_path: Path,
) -> None:
    source = tmp_path / "big.jsonl"
    build(source, 12, seed=11, real=False)  # ~15,000 events: several commits (one each 0.5 s)
    got = kill_import(tmp_path, source, ROUNDS, seed=1)
    assert got.rounds == ROUNDS
    assert got.killed_counts == got.clean_counts
    assert not got.differences, got.differences
    assert got.mid_import == ROUNDS, got  # every kill landed with work left
    assert len(set(got.offsets)) >= 2, got  # and runs resumed from a commit of a killed one


def test_follow_killed_at_random_moments_then_restarted_equals_one_clean_import(
    tmp_path: Path,
) -> None:
    source = tmp_path / "grown.jsonl"
    build(source, 2.5, seed=12, real=False)  # 60% there when it starts: ~2,000 events
    got = kill_follow(tmp_path, source, ROUNDS, seed=2)
    assert got.rounds == ROUNDS
    assert got.killed_counts == got.clean_counts
    assert not got.differences, got.differences
    assert got.mid_import >= 1, got
