"""§5 Edits answer with the diff: unified, three lines of context, hunks only, as `diff -U3`."""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file"


def unified(old: str, new: str, context: int = 3) -> str:
    """The hunks of `diff -U3 old new` without the two file-header lines; "" when equal."""
    if old == new:
        return ""
    a = _lines(old)
    b = _lines(new)
    out: list[str] = []
    for i, line in enumerate(difflib.unified_diff(a, b, n=context, lineterm="")):
        if i < 2:  # the ---/+++ header: the path is in the bracket
            continue
        if line.startswith("@@"):
            out.append(line.rstrip("\n"))
            continue
        body = line[1:]
        if body.endswith("\n"):
            out.append(line[0] + _strip_cr(body[:-1]))
        else:
            out.append(line[0] + _strip_cr(body))
            out.append(NO_NEWLINE)
    return "\n".join(out)


def counts(diff: str) -> tuple[int, int]:
    """(+N, −N) of a unified diff's hunks."""
    added = removed = 0
    for line in diff.split("\n"):
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _lines(text: str) -> list[str]:
    # Not str.splitlines: it also splits on lone \r, \x0b, \x1c…; diff only splits on \n.
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _strip_cr(text: str) -> str:
    return text[:-1] if text.endswith("\r") else text
