"""§1, §4, §5: the bracket that opens a result, in each of its forms."""

from __future__ import annotations

from ctxview.rules import brackets as b


def test_forms() -> None:
    assert b.plain("#a3f2") == "[#a3f2]"
    assert b.read("#a3f2", "src/app.ts", 1, 200, 340, "1c9e04ab") == (
        "[#a3f2 src/app.ts lines 1-200 of 340 sha 1c9e04ab]"
    )
    assert b.read_empty("#a3f2", "notes.txt", "e3b0c442") == "[#a3f2 notes.txt empty sha e3b0c442]"
    assert b.read_binary("#1", "a.png", "00ff00ff") == "[#1 a.png binary sha 00ff00ff]"
    assert b.recall("#d004", "#c9d0", 1, 2000, 3400) == "[#d004 recall #c9d0 lines 1-2000 of 3400]"
    assert b.recall_empty("#d004", "#c9d0") == "[#d004 recall #c9d0 empty]"


def test_edit_brackets() -> None:
    assert b.file_change("src/app.ts", "7d0a91c3", ref="#e201") == "[#e201 src/app.ts sha 7d0a91c3]"
    assert b.file_change("old.md", None, ref="#e203") == "[#e203 old.md deleted]"
    assert b.file_change("src/a.ts", "7d0a91c3") == "[src/a.ts sha 7d0a91c3]"
    assert b.file_change("a", "12345678", moved_to="b") == "[a moved to b sha 12345678]"


def test_file_sections_read_file_change_back() -> None:
    # A patch's body: a line before any file, then each file's line and its diff lines.
    moved = b.file_change("a.ts", "12345678", moved_to="b.ts")
    lines = ["note", b.file_change("src/a.py", "1c9e04ab"), "@@ -1 +1 @@", "-x", "+y",
             b.file_change("old.md", None), moved, "+z"]  # fmt: skip
    assert list(b.file_sections(lines, "given.py")) == [
        (None, "given.py", ["note"]),
        ("[src/a.py sha 1c9e04ab]", "src/a.py", ["@@ -1 +1 @@", "-x", "+y"]),
        ("[old.md deleted]", "old.md", []),
        (moved, "b.ts", ["+z"]),
    ]
    one = b.file_change("src/app.ts", "7d0a91c3", ref="#e201")  # an edit's own bracket
    assert list(b.file_sections([one, "+a"], None)) == [(one, "src/app.ts", ["+a"])]
    assert list(b.file_sections([], "x")) == []


def test_body_and_sentence() -> None:
    assert b.with_body("[#1]", "x\ny") == "[#1]\nx\ny"
    assert b.with_body("[#1]", "") == "[#1]"
    assert b.with_sentence("[#1]", "No change.") == "[#1] No change."
