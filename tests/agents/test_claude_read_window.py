"""The read window (spec §3: 2000 lines from an offset) with the real Claude Code (2.1.328,
pinned): its Read takes a whole file when no limit is given (up to 256 KB and its 25,000-token
cap), so the hook gives the model the first 2000 lines under a bracket that says how many the
file has, and the rest is a Read with `offset` away. An import of a transcript written without
the hooks replays its Reads to the same lines, so `stats` says what the hook did."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import after_result, needs_claude, project, tool_results
from fake_anthropic import FakeAnthropic

pytestmark = [needs_claude, pytest.mark.e2e]

LINES = 3000
# ~32 characters a line: ~96,000 characters, under Claude Code's 256 KB and (by its own estimate)
# its token cap, so it reads the file whole.
TEXT = "".join(f"{i:04d} abcdefghijklmnopqrstuvwxyz\n" for i in range(1, LINES + 1))


def _numbered(text: str) -> list[tuple[int, str]]:
    """A Read's tool_result as (Claude Code's number, line)."""
    out = []
    for raw in text.split("\n"):
        n, _, line = raw.partition("\t")
        out.append((int(n), line))
    return out


def _script(path: Path) -> list[dict[str, Any]]:
    return [
        {"tool": "Read", "input": {"file_path": str(path)}},
        {"tool": "Read", "input": {"file_path": str(path)}},
        {"tool": "Read", "input": {"file_path": str(path), "offset": 2001}},
        {"text": "Read it all."},
    ]


def _reads(store: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(
            "SELECT rkind, line_from, line_to, line_total, points_to - (SELECT min(rid) FROM "
            "events WHERE kind = 'result') FROM events WHERE kind = 'result' ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()


def test_a_long_read_is_windowed_and_the_rest_is_a_read_away(tmp_path: Path) -> None:
    (tmp_path / "hooked").mkdir()
    (tmp_path / "plain").mkdir()
    with project(tmp_path / "hooked") as p:
        big = p.root / "big.txt"
        big.write_text(TEXT)
        assert p.ctxview("install", "claude-code").returncode == 0
        with FakeAnthropic(_script(big)) as api:
            p.claude(api.url, "read big.txt")
            got = tool_results(api.main_requests[-1])
        first, again, rest = (got[k] for k in sorted(got))

        # The first 2000 lines, Claude Code's own numbers, the bracket as line 0.
        rows = _numbered(first)
        assert re.fullmatch(rf"\[#1000 {re.escape(str(big))} lines 1-2000 of 3000 sha "
                            r"[0-9a-f]{8}\]", rows[0][1]) and rows[0][0] == 0  # fmt: skip
        assert [n for n, _ in rows[1:]] == list(range(1, 2001))
        assert rows[2000][1] == "2000 abcdefghijklmnopqrstuvwxyz" and len(rows) == 2001
        # The whole file again: the lines the window showed are unchanged, so the stub.
        assert again == (
            f"0\t[#1001 {big} lines 1-2000 of 3000 sha {first.split('sha ')[1][:8]}]"
            " Unchanged since #1000, which already shows lines 1-2000."
        )
        # The rest, with the offset the bracket leads to: in full, numbered from 2001.
        rows = _numbered(rest)
        assert rows[0] == (2000, f"[#1002 {big} lines 2001-3000 of 3000 sha "
                                 f"{first.split('sha ')[1][:8]}]")  # fmt: skip
        assert [n for n, _ in rows[1:]] == list(range(2001, 3001))
        assert rows[-1][1] == "3000 abcdefghijklmnopqrstuvwxyz"
        hooked = _reads(p.store)
    assert hooked == [("full", 1, 2000, 3000, None), ("unchanged", 1, 2000, 3000, 0),
                      ("full", 2001, 3000, 3000, None)]  # fmt: skip

    # The same session without the hooks, its transcript imported: the replay windows the same
    # reads to the same lines, so `stats` counts what the hook gave.
    with project(tmp_path / "plain") as p:
        big = p.root / "big.txt"
        big.write_text(TEXT)
        with FakeAnthropic(_script(big)) as api:
            sid = p.claude(api.url, "read big.txt")["session_id"]
            whole = tool_results(api.main_requests[-1])
        assert len(_numbered(whole[sorted(whole)[0]])) >= LINES  # Claude Code's own: all of it
        transcript = next((p.home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
        store = tmp_path / "imported.db"
        done = p.ctxview("--store", str(store), "import", str(transcript))
        assert done.returncode == 0, done.stderr
        assert _reads(store) == hooked
        stats = p.ctxview("--store", str(store), "stats", "--json")
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)


def test_past_claude_codes_token_cap_the_bracket_names_the_page_its_banner_names(
    tmp_path: Path,
) -> None:
    """Claude Code counts a large file's tokens (`count_tokens`); past 25,000 it sends the first
    page of a whole-file read and a banner after it naming those lines and the offset to go on
    from. The bracket names the same lines, and a re-read inside them is the stub."""

    def tokens(body: dict[str, Any]) -> int:
        return len(json.dumps(body.get("messages", []))) // 2  # the file: ~49,000 "tokens"

    with project(tmp_path) as p:
        big = p.root / "big.txt"
        big.write_text(TEXT)
        assert p.ctxview("install", "claude-code").returncode == 0
        steps = [{"tool": "Read", "input": {"file_path": str(big)}},
                 {"tool": "Read", "input": {"file_path": str(big)}},
                 {"tool": "Read", "input": {"file_path": str(big), "offset": 101, "limit": 100}},
                 {"text": "Paged."}]  # fmt: skip
        with FakeAnthropic(steps, count_tokens=tokens) as api:
            p.claude(api.url, "read big.txt")
            last = api.main_requests[-1]
        got = tool_results(last)
        first, again, inside = (got[k] for k in sorted(got))
        rows = _numbered(first)
        m = re.fullmatch(rf"\[#1000 {re.escape(str(big))} lines 1-(\d+) of 3000 sha "
                         r"([0-9a-f]{8})\]", rows[0][1])  # fmt: skip
        assert m, rows[0]
        shown = int(m[1])
        assert 200 < shown < 2000  # Claude Code's first page, inside the window
        assert [n for n, _ in rows[1:]] == list(range(1, shown + 1))
        assert all(line == f"{n:04d} abcdefghijklmnopqrstuvwxyz" for n, line in rows[1:])
        banner = "\n".join(after_result(last, sorted(got)[0]))
        assert f"showing lines 1-{shown} of " in banner and f"offset={shown + 1}" in banner, banner
        assert again == (f"0\t[#1001 {big} lines 1-{shown} of 3000 sha {m[2]}] Unchanged since "
                         f"#1000, which already shows lines 1-{shown}.")  # fmt: skip
        assert inside == (f"100\t[#1002 {big} lines 101-200 of 3000 sha {m[2]}] Unchanged "
                          f"since #1000, which already shows lines 1-{shown}.")  # fmt: skip
