"""DESIGN decision 7: the `*** Begin Patch` envelope, parsed and applied in memory."""

from __future__ import annotations

import pytest

from ctxview.tools import ToolError
from ctxview.tools.patch import apply_chunks, parse


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


def test_add_update_move_delete_in_order() -> None:
    ops = parse(patch(
        "*** Add File: docs/new.md", "+# New", "+",
        "*** Update File: src/a.py", "*** Move to: src/b.py", "@@ def f():", "-    return 1",
        "+    return 2",
        "*** Delete File: old.md",
    ))  # fmt: skip
    assert [(o.kind, o.path) for o in ops] == [
        ("add", "docs/new.md"), ("update", "src/a.py"), ("delete", "old.md")]  # fmt: skip
    assert ops[0].content == "# New\n\n"
    assert ops[1].move_to == "src/b.py"
    assert ops[1].chunks[0].header == "def f():"
    assert ops[1].chunks[0].old == ["    return 1"] and ops[1].chunks[0].new == ["    return 2"]


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("*** Update File: a\n-x\n+y", "it must start with '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: a\n+x", "it must end with '*** End Patch'"),
        (patch(), "it changes no file"),
        (patch("*** Add File: a", "x"), "line 3: an added file's lines must start with '+'"),
        (patch("*** Update File: a"), "the update of a has no hunks"),
        (
            patch("*** Update File: a", "@@", "?x"),
            "line 4: a hunk line must start with ' ', '-' or '+'",
        ),
        (patch("hello"), "line 2 is not a file operation: 'hello'"),
    ],
)
def test_bad_patches_say_why(text: str, detail: str) -> None:
    with pytest.raises(ToolError) as err:
        parse(text)
    assert err.value.key == "error.bad_patch"
    assert err.value.fields["detail"] == detail


def test_not_a_string() -> None:
    with pytest.raises(ToolError) as err:
        parse(None)  # type: ignore[arg-type]
    assert err.value.key == "error.bad_args"


def test_hunks_apply_in_order_after_their_context() -> None:
    ops = parse(patch("*** Update File: a", "@@", " x", "-y", "+Y", "@@", " x", "-y", "+Z"))
    assert apply_chunks("x\ny\nx\ny\n", ops[0].chunks, "a") == "x\nY\nx\nZ\n"


def test_end_of_file_anchors_the_hunk_at_the_end() -> None:
    ops = parse(patch("*** Update File: a", "@@", "-y", "+Y", "*** End of File"))
    assert apply_chunks("y\nx\ny\n", ops[0].chunks, "a") == "y\nx\nY\n"


def test_crlf_file_and_missing_context() -> None:
    ops = parse(patch("*** Update File: a", "@@", " a", "-b", "+B"))
    assert apply_chunks("a\r\nb\r\n", ops[0].chunks, "a") == "a\r\nB\r\n"  # CRLF kept
    assert apply_chunks("a\nb\n", ops[0].chunks, "a") == "a\nB\n"
    with pytest.raises(ToolError) as err:
        apply_chunks("q\n", ops[0].chunks, "a")
    assert err.value.fields["detail"] == "the lines to change (from 'a') are not in a"
