"""What the model is told, checked against what it gets: every claim of a block
(`src/ctxview/prompts/claims.py`) has a check that drives its behaviour where the block is shown (the
engine, ctxview's MCP tools in Codex, Claude Code's hooks), and every text a claim quotes has the
shape of a text the model really got there."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ctxview.prompts import Claim

# What may differ between a quoted example and a real text: ids, hashes, paths, numbers.
_PARTS = re.compile(
    r"(?P<id>#[0-9a-f]{4}\b)|(?P<sha>\b[0-9a-f]{8}\b)|(?P<path>[\w-]*(?:/[\w.-]+|\.\w+)+)"
    r"|(?P<num>\d[\d,]*)"
)
_AS = {"id": "#[0-9a-f]{4,}", "sha": "[0-9a-f]{8}", "path": r"\S+", "num": r"\d[\d,]*"}


def shape(example: str) -> re.Pattern[str]:
    """A pattern for the texts `example` stands for: its words as they are, its ids, hashes,
    paths and numbers as any."""
    out, at = [], 0
    for m in _PARTS.finditer(example):
        out.append(re.escape(example[at : m.start()]))
        out.append(_AS[m.lastgroup or "num"])
        at = m.end()
    out.append(re.escape(example[at:]))
    return re.compile("".join(out))


def assert_told(claims: list[Claim], checks: dict[str, Callable[[], None]],
                texts: Iterable[str]) -> None:  # fmt: skip
    """Each claim's check passes and each of its examples has the shape of a real text; a
    claim without a check (a sentence added, its behaviour not driven) fails, and so does a
    check for a claim the block does not make."""
    real = list(texts)
    assert sorted({c.key for c in claims}) == sorted(checks), "a claim without a check"
    for claim in claims:
        checks[claim.key]()
        for example in claim.examples:
            pattern = shape(example)
            assert any(pattern.search(t) for t in real), (claim.key, example, pattern.pattern)


def normalized(text: str) -> str:
    return " ".join(text.split())
