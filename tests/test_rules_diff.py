"""§5 and DESIGN decision 7: our hunks are exactly `diff -U3`'s, without the two header lines."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxview.rules.diff import NO_NEWLINE, counts, unified

DIFF = shutil.which("diff")
needs_diff = pytest.mark.skipif(DIFF is None, reason="no diff on this machine")


def real_diff(tmp: Path, old: str, new: str) -> str:
    (tmp / "a").write_text(old, encoding="utf-8", newline="")
    (tmp / "b").write_text(new, encoding="utf-8", newline="")
    done = subprocess.run([DIFF or "diff", "-U3", "a", "b"], cwd=tmp, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return "\n".join(done.stdout.split("\n")[2:]).rstrip("\n")


def text_of(lines: list[str], final_newline: bool) -> str:
    return "\n".join(lines) + ("\n" if lines and final_newline else "")


def test_equal_texts_have_no_diff() -> None:
    assert unified("a\nb\n", "a\nb\n") == ""


def test_hunk_headers() -> None:
    assert unified("", "x\n") == "@@ -0,0 +1 @@\n+x"
    assert unified("x\n", "") == "@@ -1 +0,0 @@\n-x"
    assert unified("a\nb\nc\n", "a\nB\nc\n") == "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"


def test_missing_final_newline_is_marked() -> None:
    assert unified("a\nb", "a\nb\n") == f"@@ -1,2 +1,2 @@\n a\n-b\n{NO_NEWLINE}\n+b"


def test_crlf_lines_show_without_cr() -> None:
    assert unified("a\r\nb\r\n", "a\r\nc\r\n") == "@@ -1,2 +1,2 @@\n a\n-b\n+c"


def test_counts() -> None:
    assert counts("@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c") == (2, 1)


LINE = st.sampled_from(["a", "b", "c", "", "}", "  x = 1", "def f():", "return"])


@needs_diff
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    old=st.lists(LINE, max_size=30), new=st.lists(LINE, max_size=30),
    nl_old=st.booleans(), nl_new=st.booleans(),
)  # fmt: skip
def test_same_as_diff_on_random_texts(tmp_path: Path, old: list[str], new: list[str],
                                      nl_old: bool, nl_new: bool) -> None:  # fmt: skip
    a, b = text_of(old, nl_old), text_of(new, nl_new)
    assert unified(a, b) == real_diff(tmp_path, a, b)


@needs_diff
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_same_as_diff_on_edits_of_a_long_file(tmp_path: Path, seed: int) -> None:
    """Realistic edits: a few inserted, deleted and replaced runs in a file of up to 600 lines
    with many repeated lines (blank lines, braces), which exercises diff's discarding."""
    rnd = random.Random(seed)
    alphabet = [f"x{i}" for i in range(rnd.randint(5, 300))] + ["", "}", "  return"] * 3
    old = [rnd.choice(alphabet) for _ in range(rnd.randint(0, 600))]
    new = list(old)
    for _ in range(rnd.randint(1, 12)):
        pos = rnd.randint(0, len(new))
        op = rnd.random()
        if op < 0.4 and new:
            del new[min(pos, len(new) - 1) : min(pos, len(new) - 1) + rnd.randint(1, 5)]
        elif op < 0.8:
            new[pos:pos] = [rnd.choice(alphabet) for _ in range(rnd.randint(1, 6))]
        elif new:
            new[min(pos, len(new) - 1)] = rnd.choice(alphabet)
    a, b = text_of(old, rnd.random() < 0.9), text_of(new, rnd.random() < 0.9)
    assert unified(a, b) == real_diff(tmp_path, a, b)


def test_a_pathological_rewrite_stays_bounded() -> None:
    """A large file rewritten into dissimilar text of few distinct lines: the work budget keeps
    it to seconds, and the diff is still a correct one (applying it gives the new text)."""
    rnd = random.Random(5)
    old = [f"l{rnd.randint(0, 20)}" for _ in range(3000)]
    new = [f"l{rnd.randint(0, 20)}" for _ in range(3000)]
    diff = unified("\n".join(old) + "\n", "\n".join(new) + "\n")
    kept_old = [ln[1:] for ln in diff.split("\n") if ln[:1] in (" ", "-")]
    kept_new = [ln[1:] for ln in diff.split("\n") if ln[:1] in (" ", "+")]
    assert kept_old == old and kept_new == new  # one hunk covering both files
