"""What a written file holds of redactions, counted from what is written to it: the markers
`[redacted: KIND]` in its text, by kind. A file states exactly this (a running total over
an export, or what the redactor was asked to look at, would not be what the file holds)."""

from __future__ import annotations

import re
from collections import Counter

MARKER = re.compile(r"\[redacted: ([a-z0-9-]+)\]")
_OPEN = "[redacted: "


class Tally:
    """Markers counted in the text written to one file."""

    def __init__(self, redacted: bool = True) -> None:
        self.redacted = redacted
        self.counts: Counter[str] = Counter()

    def add(self, text: str) -> str:
        """Count the markers in `text` (a whole block: a marker never spans two); `text` back."""
        if _OPEN in text:
            self.counts.update(MARKER.findall(text))
        return text

    def update(self, other: Tally | Counter[str]) -> None:
        self.counts.update(other.counts if isinstance(other, Tally) else other)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def note(self, what: str = "this file") -> str:
        """`this file holds 3 redacted secrets: 2 github-token, 1 jwt` (or none, or that
        nothing was redacted)."""
        if not self.redacted:
            return "not redacted (--no-redact)"
        return f"{what} holds {kinds(self.counts)}"


def kinds(counts: Counter[str]) -> str:
    """`3 redacted secrets: 2 github-token, 1 jwt`, or `no redacted secrets`."""
    total = sum(counts.values())
    if not total:
        return "no redacted secrets"
    most = sorted(counts.items(), key=lambda x: (-x[1], x[0]))  # ties by name: stable wording
    return (f"{total} redacted secret{'s' * (total != 1)}: "
            + ", ".join(f"{n} {k}" for k, n in most))  # fmt: skip


def tally_file(text: str) -> Counter[str]:
    """The markers a file's text holds, by kind (the tests' and the statement's count)."""
    return Counter(MARKER.findall(text))
