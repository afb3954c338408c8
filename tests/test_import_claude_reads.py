"""Claude Code's Read output as the rules take it (`claude_code.read_lines`, shared by the hook
and the import): lines counted as the rules count them, the read window, and a transcript's
reads replayed to the brackets the hook gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxview.importers.claude_code import ReadLines, read_lines
from ctxview.importers.runner import import_file
from ctxview.store import Reader, Writer


def _file(content: str, start: int, total: int, **more: Any) -> dict[str, Any]:
    """`file` as Claude Code 2.1.328 gives it: `numLines` counts the lines of `content`, with
    the empty one after a final newline, and so does `totalLines`."""
    return {"filePath": "/w/a.txt", "content": content, "numLines": content.count("\n") + 1,
            "startLine": start, "totalLines": total, **more}  # fmt: skip


def test_the_empty_line_claude_code_counts_after_a_final_newline_is_not_a_line() -> None:
    assert read_lines(_file("a\nb\n", 1, 3), {}, 2000) == ReadLines(1, ["a", "b"], 2, True)
    assert read_lines(_file("a\nb", 1, 2), {}, 2000) == ReadLines(1, ["a", "b"], 2, True)
    assert read_lines(_file("a\n\n", 1, 3), {}, 2000) == ReadLines(1, ["a", ""], 2, True)
    # Short of the end, an empty line is the file's; the length may be one less than counted.
    assert read_lines(_file("a\n", 1, 4), {}, 2000) == ReadLines(1, ["a", ""], 3, False)
    # The hook knows the file's length: no guess.
    assert read_lines(_file("a\n", 1, 4), {}, 2000, real_total=4) == ReadLines(
        1, ["a", ""], 4, True)  # fmt: skip
    assert read_lines(_file("", 1, 1), {}, 2000) == ReadLines(1, [], 0, True)
    # `offset: 0` gives `startLine: 0`; the content is still the file's first line.
    assert read_lines(_file("a\n", 0, 2), {"offset": 0}, 2000).first == 1


def test_the_read_window_keeps_2000_lines_from_the_offset() -> None:
    text = "".join(f"{i}\n" for i in range(1, 3001))
    whole = read_lines(_file(text, 1, 3001), {}, 2000)
    assert (whole.first, len(whole.lines), whole.lines[-1], whole.total) == (1, 2000, "2000",
                                                                             3000)  # fmt: skip
    rest = read_lines(_file("".join(f"{i}\n" for i in range(2001, 3001)), 2001, 3001),
                      {"offset": 2001}, 2000)  # fmt: skip
    assert (rest.first, rest.lines[0], rest.lines[-1], rest.total) == (2001, "2001", "3000", 3000)


def _turns(reads: list[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    """A transcript of Reads (input, the `file` of its result), as Claude Code writes it."""
    common = {"sessionId": "5e55-2", "cwd": "/w", "isSidechain": False, "version": "2.1.328"}
    rows: list[dict[str, Any]] = [{**common, "type": "user", "uuid": "u0",
                                   "timestamp": "2026-12-01T07:00:00Z",
                                   "message": {"role": "user", "content": "read"}}]  # fmt: skip
    for i, (args, file) in enumerate(reads):
        rows.append(
            {
                **common,
                "type": "assistant",
                "uuid": f"a{i}",
                "timestamp": f"2026-12-01T07:00:{i + 1:02d}Z",
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "model": "m",
                    "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": args}],
                },
            }
        )
        rows.append({**common, "type": "user", "uuid": f"r{i}",
                     "timestamp": f"2026-12-01T07:00:{i + 1:02d}Z",
                     "message": {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": f"t{i}", "content": "…"}]},
                     "toolUseResult": {"type": "text", "file": file}})  # fmt: skip
    return rows


async def test_a_transcripts_reads_replay_to_the_hooks_lines(tmp_path: Path) -> None:
    text = "".join(f"{i}\n" for i in range(1, 3001))  # 3,000 lines, Claude Code's 3,001
    part = "".join(f"{i}\n" for i in range(101, 201))
    rows = _turns([
        ({"file_path": "/w/a.txt"}, _file(text, 1, 3001)),
        ({"file_path": "/w/a.txt", "offset": 101, "limit": 100}, _file(part[:-1], 101, 3001)),
        ({"file_path": "/w/a.txt", "offset": 2001}, _file(text.split("2000\n", 1)[1], 2001, 3001)),
        ({"file_path": "/w/a.txt"}, _file(text, 1, 3001)),
    ])  # fmt: skip
    src = tmp_path / "5e55-2.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    writer = await Writer.open(tmp_path / "s.db")
    try:
        async with writer.batch():
            report = await import_file(writer, src)
    finally:
        await writer.close()
    async with await Reader.open(tmp_path / "s.db") as reader:
        res = [e for e in await reader.events(report.session) if e.kind == "result"]
        first = await reader.body(report.session, res[0].rid)
    assert [(r.rkind, r.line_from, r.line_to, r.line_total) for r in res] == [
        ("full", 1, 2000, 3000), ("unchanged", 101, 200, 3000), ("full", 2001, 3000, 3000),
        ("unchanged", 1, 2000, 3000),
    ]  # fmt: skip
    assert first is not None and " lines 1-2000 of 3000 sha " in first.shown.split("\n")[0]
