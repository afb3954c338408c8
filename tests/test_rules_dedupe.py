"""§2, §6 and §7's table: the dedupe table's decisions, as pure functions."""

from __future__ import annotations

from ctxview.rules.dedupe import DedupeTable, ReadEntry, ResultEntry, args_key


def read(
    rid: int, path: str, first: int, last: int, sha: str = "s1", total: int = 100
) -> ReadEntry:
    return ReadEntry(rid, path, path, first, last, total, sha)


def test_unchanged_needs_same_path_same_hash_and_lines_wholly_inside() -> None:
    t = DedupeTable()
    t.add_read(read(1, "a.py", 1, 50))
    assert t.unchanged("a.py", "s1", 1, 50).rid == 1  # type: ignore[union-attr]
    assert t.unchanged("a.py", "s1", 10, 20).rid == 1  # type: ignore[union-attr]
    assert t.unchanged("a.py", "s1", 40, 51) is None  # reaches past the read
    assert t.unchanged("a.py", "s2", 1, 10) is None  # another hash: the file changed
    assert t.unchanged("b.py", "s1", 1, 10) is None  # another path


def test_unchanged_names_the_newest_read_holding_the_range() -> None:
    t = DedupeTable()
    t.add_read(read(1, "a.py", 1, 100))
    t.add_read(read(2, "a.py", 1, 10))
    t.add_read(read(3, "a.py", 50, 60))
    assert t.unchanged("a.py", "s1", 5, 6).rid == 2  # type: ignore[union-attr]
    assert t.unchanged("a.py", "s1", 55, 56).rid == 3  # type: ignore[union-attr]
    assert t.unchanged("a.py", "s1", 20, 30).rid == 1  # type: ignore[union-attr]
    assert t.unchanged("a.py", "s1", 8, 12).rid == 1  # type: ignore[union-attr]


def test_two_reads_together_are_not_one() -> None:
    t = DedupeTable()
    t.add_read(read(1, "a.py", 1, 5))
    t.add_read(read(2, "a.py", 6, 10))
    assert t.unchanged("a.py", "s1", 4, 7) is None


def test_args_compared_as_json_with_sorted_keys() -> None:
    assert args_key({"b": 1, "a": [1, 2]}) == args_key({"a": [1, 2], "b": 1})
    assert args_key({"a": 1}) != args_key({"a": "1"})


def test_same_result_needs_tool_args_and_text() -> None:
    t = DedupeTable()
    k = args_key({"pattern": "x"})
    t.add_result(ResultEntry(1, "grep", k, "h1"))
    t.add_result(ResultEntry(2, "grep", k, "h2"))
    assert t.same_result("grep", k, "h1").rid == 1  # type: ignore[union-attr]
    assert t.same_result("grep", k, "h2").rid == 2  # type: ignore[union-attr]
    assert t.same_result("glob", k, "h1") is None
    assert t.same_result("grep", args_key({"pattern": "y"}), "h1") is None


def test_newest_reads_one_per_path_newest_last_at_most_rows() -> None:
    t = DedupeTable()
    t.add_read(read(1, "a.py", 1, 5))
    t.add_read(read(2, "b.py", 1, 5))
    t.add_read(read(3, "c.py", 1, 5))
    t.add_read(read(4, "a.py", 1, 9, "s2"))
    assert [e.rid for e in t.newest_reads(50)] == [2, 3, 4]
    assert [e.rid for e in t.newest_reads(2)] == [3, 4]
    assert t.newest_reads(0) == []


def test_clear_empties_both_tables() -> None:
    t = DedupeTable()
    t.add_read(read(1, "a.py", 1, 5))
    t.add_result(ResultEntry(2, "grep", "{}", "h"))
    t.clear()
    assert t.unchanged("a.py", "s1", 1, 5) is None
    assert t.same_result("grep", "{}", "h") is None
    assert t.newest_reads(50) == []
