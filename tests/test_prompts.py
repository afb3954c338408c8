"""What the model is told (spec §9): backend/prompts/context.md."""

from __future__ import annotations

from ctxview.backend.config import Config
from ctxview.backend.prompts import context_block


def _words(text: str) -> str:
    return " ".join(text.split())


def test_context_block_explains_ids_stubs_elision_edits_table_and_recall() -> None:
    text = _words(context_block())
    for needle in ("[#a3f2]", "Unchanged since #a3f2", "Same result as #f001.",
                   "lines elided, full output #c9d0]", "[…cut]", "diff",
                   "Files read", "recall(id, offset?, limit?)", "with or without `#`"):  # fmt: skip
        assert needle in text, needle
    assert text.count("recall") >= 4


def test_context_block_numbers_are_the_config_defaults() -> None:
    cfg, text = Config(), _words(context_block())
    assert f"{cfg['cap.max_lines']} lines" in text
    assert f"{cfg['cap.max_chars']:,} characters" in text
    assert f"most {cfg['window.lines']}" in text


def test_context_block_sentences_match_the_engine() -> None:
    cfg, text = Config(), _words(context_block())
    assert cfg.text("text.no_result", ref="#ffff") in text
    assert cfg.text("text.elided", n=1234, ref="#c9d0") in text
    assert cfg.text("text.same_result", ref="#f001") in text


def test_context_block_tells_a_session_its_own_limits() -> None:
    cfg = Config({"cap.max_lines": 100, "cap.max_chars": 9000, "window.lines": 500})
    text = _words(context_block(cfg))
    assert "over 100 lines or 9,000 characters" in text
    assert "most 500" in text
    assert "400 lines" not in text
