"""One bad line never stops `ctxview import` (issue 8, point 5): each line the reliability probe
found crashing the import is skipped (or repaired) and listed with its file and line number, the
files after it are imported, a file that is one 50 MB line of a valid record is imported, and
every field of our fixtures set to every wrong type imports without a traceback. The random
fuzzer is test_import_fuzz.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from import_fuzz import (
    FIXTURES,
    command_errors,
    every_field_cases,
    good_events,
    run_case,
    run_import,
)

SID = "11111111-2222-3333-4444-555555555555"
CLAUDE_LINES = (FIXTURES / "claude_session.jsonl").read_text(encoding="utf-8").splitlines()
CODEX_LINES = (FIXTURES / "codex_rollout.jsonl").read_text(encoding="utf-8").splitlines()


def _claude(**fields: object) -> str:
    rec = {"type": "user", "uuid": "ubad", "parentUuid": None, "sessionId": SID,
           "timestamp": "2026-01-01T11:00:00.000Z", "cwd": "/home/dev/proj",
           "message": {"role": "user", "content": "a prompt"}}  # fmt: skip
    rec.update(fields)
    return json.dumps(rec)  # ensure_ascii: a lone surrogate is written as its escape


def _read_result(total: int) -> str:
    return json.dumps({"type": "user", "uuid": "ur", "sessionId": SID, "cwd": "/home/dev/proj",
                       "timestamp": "2026-01-01T11:00:00.000Z",
                       "message": {"role": "user", "content": [{"type": "tool_result",
                                   "tool_use_id": "t1", "content": "x"}]},
                       "toolUseResult": {"type": "text", "file": {"filePath": "/a", "content": "x",
                                         "numLines": 1, "startLine": 1, "totalLines": total}}})  # fmt: skip


def _codex_meta(cwd: object) -> str:
    return json.dumps({"timestamp": "2026-01-02T10:00:00.000Z", "type": "session_meta",
                       "payload": {"id": "019a0000-0000-7000-8000-000000000001", "cwd": cwd}})  # fmt: skip


# (name, format, the bad line, what the listing says). Each goes in the middle of a good file.
BAD_LINES = [
    ("null", "claude", "null", "the record is NoneType"),
    ("null-codex", "codex", "null", "the record is NoneType"),
    ("surrogate-sessionId", "claude", _claude(sessionId="\ud800"), "lone surrogate"),
    ("surrogate-message-id", "claude",
     _claude(type="assistant", message={"id": "m\udfff", "role": "assistant",
                                        "content": [{"type": "text", "text": "t"}]}),
     "lone surrogate"),
    ("surrogate-prompt", "claude", _claude(message={"role": "user", "content": "p\ud83d"}),
     "lone surrogate"),
    ("codex-cwd-list", "codex", _codex_meta(["/a", "/b"]), "payload.cwd is not a path"),
    ("codex-cwd-object", "codex", _codex_meta({"path": "/a"}), "payload.cwd is not a path"),
    ("cwd-nul", "claude", _claude(cwd="/home/\u0000dev"), "cwd is not a path"),
    ("codex-cwd-nul", "codex", _codex_meta("/x\u0000"), "payload.cwd is not a path"),
    ("agentId-2**63", "claude", _claude(isSidechain=True, agentId=2**63), "agentId is int"),
    ("totalLines-2**63", "claude", _read_result(2**63), None),
    ("timestamp-NaN", "claude", _claude(timestamp=float("nan")), "timestamp nan is not a time"),
    ("timestamp-inf-codex", "codex",
     json.dumps({"timestamp": float("inf"), "type": "event_msg",
                 "payload": {"type": "user_message", "message": "hi"}}),
     "timestamp inf is not a time"),
]  # fmt: skip


def _events(store: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT s.source_path, count(e.seq) FROM sessions s LEFT JOIN "
                                 "events e ON e.session = s.id GROUP BY s.id"))  # fmt: skip
    finally:
        conn.close()


@pytest.mark.parametrize(("name", "fmt", "bad", "says"), BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_a_bad_line_is_listed_and_the_rest_imported(tmp_path: Path, name: str, fmt: str,
                                                    bad: str, says: str | None) -> None:  # fmt: skip
    good = CLAUDE_LINES if fmt == "claude" else CODEX_LINES
    # First place, where the session is identified, and in the middle.
    for at in (0, len(good) // 2):
        work = tmp_path / str(at)
        work.mkdir()
        lines = [*good[:at], bad, *good[at:]]
        broken, after = work / "broken.jsonl", work / "after.jsonl"
        broken.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        after.write_text("\n".join(CODEX_LINES if fmt == "claude" else CLAUDE_LINES) + "\n")
        clean = work / "clean.jsonl"
        clean.write_text("\n".join(good) + "\n")
        code, err = run_import(work / "s.db", broken, after)
        assert code == 0, err
        assert "Traceback" not in err and not command_errors(err), err
        if says is not None:
            listed = [line for line in err.splitlines() if f"{broken}:{at + 1}:" in line]
            assert listed and says in listed[0], err
        code, _ = run_import(work / "clean.db", clean, after)
        got, want = _events(work / "s.db"), _events(work / "clean.db")
        assert got[str(after)] == want[str(after)]  # the file after it: imported whole
        # The broken file: everything but the bad line (a repaired one adds its own events).
        assert got[str(broken)] >= want[str(clean)] - (1 if at == 0 else 0)


def test_a_file_of_one_50_mb_line_is_imported(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    text = "y" * 50_000_000
    big.write_text(_claude(message={"role": "user", "content": text}) + "\n")
    code, err = run_import(tmp_path / "s.db", big)
    assert code == 0, err
    conn = sqlite3.connect(tmp_path / "s.db")
    try:
        (n,) = conn.execute("SELECT length(text) FROM events WHERE kind = 'message'").fetchone()
    finally:
        conn.close()
    assert n == len(text)


def test_every_field_of_every_record_with_every_wrong_type(tmp_path: Path) -> None:
    """Each field (at any depth) of each record of a Claude Code and a Codex fixture set in turn
    to each of the values that broke importers (None, bools, 2**63, NaN, lone surrogates, NUL,
    lists, objects, huge strings, odd times): one transcript per value, then a good file."""
    expected = good_events(tmp_path)
    files = [FIXTURES / "claude_session.jsonl", FIXTURES / "codex_rollout.jsonl"]
    outcomes = [run_case(tmp_path, name, data, expected) for name, data in every_field_cases(files)]
    failed = [o for o in outcomes if not o.ok]
    assert len(outcomes) > 50
    assert not failed, "\n\n".join(f"{o.case}:\n{o.why}" for o in failed[:3])
