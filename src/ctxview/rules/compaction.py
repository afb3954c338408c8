"""§7 Compaction: the summary, then the table of files read before it."""

from __future__ import annotations

from ctxview.rules.config import Config
from ctxview.rules.dedupe import ReadEntry
from ctxview.rules.ids import format_id


def files_read_table(reads: list[ReadEntry], config: Config) -> str:
    """The table the harness adds after the summary; "" with no reads."""
    if not reads:
        return ""
    digits, sha_digits = config["ids.digits"], config["sha_digits"]
    rows = [
        config["text.files_read_heading"],
        "",
        config["text.files_read_intro"],
        "",
        "| Path | Lines | sha | Result |",
        "|---|---|---|---|",
    ]
    for entry in reads:
        lines = f"{entry.first}-{entry.last} of {entry.total}" if entry.total else "empty"
        path = entry.shown_path.replace("|", "\\|")
        rows.append(
            f"| {path} | {lines} | {entry.sha[:sha_digits]} | {format_id(entry.rid, digits)} |"
        )
    return "\n".join(rows)


def compaction_text(summary: str, reads: list[ReadEntry], config: Config) -> str:
    """The summary, a blank line, the table (DESIGN decision 9); the summary alone with no reads."""
    table = files_read_table(reads, config)
    return f"{summary}\n\n{table}" if table else summary
