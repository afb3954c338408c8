"""Other agents' sessions that look like ours are not imported as Claude Code or Codex (realdata
holds pi and Qwen Code sessions: pi's `{"type": "message"}` was taken for a legacy Codex item,
Qwen's `uuid`/`sessionId` records for Claude Code's): pi's is pi's now (issue 19), Qwen Code's,
which ctxview does not read, is refused in one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxview.importers import formats
from ctxview.importers.detect import CLAUDE, CODEX, NotTranscript, detect

PI = [{"type": "session", "id": "ffae836b", "timestamp": "2025-12-09T00:53:29.825Z", "cwd": "/w"},
      {"type": "message", "timestamp": "2025-12-08T22:41:05.306Z",
       "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}]  # fmt: skip
QWEN = [{"uuid": "u1", "parentUuid": None, "sessionId": "s1", "type": "user",
         "message": {"role": "user", "parts": [{"text": "hi"}]}},
        {"uuid": "u2", "parentUuid": "u1", "sessionId": "s1", "type": "system",
         "subtype": "custom_title", "systemPayload": {"customTitle": "t"}}]  # fmt: skip


def _write(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_qwen_codes_session_is_not_taken_for_ours(tmp_path: Path) -> None:
    with pytest.raises(NotTranscript, match="neither a Claude Code nor a Codex transcript"):
        detect(_write(tmp_path, QWEN))


def test_pis_session_is_pis(tmp_path: Path) -> None:
    assert detect(_write(tmp_path, PI)) == formats.PI
    assert detect(_write(tmp_path, PI[1:])) == formats.PI  # no header: its message records


def test_ours_are_still_ours(tmp_path: Path) -> None:
    legacy = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    assert detect(_write(tmp_path, legacy)) == CODEX
    claude = [{"type": "user", "uuid": "u", "sessionId": "s",
               "message": {"role": "user", "content": "hi"}}]  # fmt: skip
    assert detect(_write(tmp_path, claude)) == CLAUDE
