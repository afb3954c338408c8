"""Counts in words: "1 result", "2 results", "1,500 lines" (never "1 results")."""

from __future__ import annotations


def count(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"
