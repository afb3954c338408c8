"""§7 and DESIGN decision 9: the text compaction inserts."""

from __future__ import annotations

from ctxview.rules.compaction import compaction_text, files_read_table
from ctxview.rules.config import Config
from ctxview.rules.dedupe import ReadEntry

CFG = Config()
SHA = "1c9e04ab" + "0" * 56


def test_no_reads_is_the_summary_alone() -> None:
    assert files_read_table([], CFG) == ""
    assert compaction_text("The summary.", [], CFG) == "The summary."


def test_the_table_after_the_summary() -> None:
    reads = [
        ReadEntry(0xA3F2, "src/app.ts", "src/app.ts", 1, 200, 340, SHA),
        ReadEntry(0xA3F3, "e.txt", "./e.txt", 0, 0, 0, "e3b0c442" + "0" * 56),
        ReadEntry(0x10000, "a|b", "a|b", 7, 7, 9, SHA),
    ]
    assert compaction_text("Sum.", reads, CFG) == "\n".join([
        "Sum.",
        "",
        "## Files read before this summary",
        "",
        "Read a file again for its content; recall shows a result by its id.",
        "",
        "| Path | Lines | sha | Result |",
        "|---|---|---|---|",
        "| src/app.ts | 1-200 of 340 | 1c9e04ab | #a3f2 |",
        "| ./e.txt | empty | e3b0c442 | #a3f3 |",
        "| a\\|b | 7-7 of 9 | 1c9e04ab | #10000 |",
    ])  # fmt: skip


def test_digits_from_config() -> None:
    cfg = Config({"ids.digits": 6, "sha_digits": 4})
    table = files_read_table([ReadEntry(0x1000, "a", "a", 1, 1, 1, SHA)], cfg)
    assert table.endswith("| a | 1-1 of 1 | 1c9e | #001000 |")
