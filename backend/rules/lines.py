"""Lines as DESIGN decides: split on \\n, a final \\n starts no new line, "" has none, \\r hidden."""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def count_lines(text: str) -> int:
    """The number of lines without building them (a 200 MB output must not be split)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def numbered(lines: list[str], first: int) -> str:
    """A read's body: `{n}: {text}` per line."""
    return "\n".join(f"{first + i}: {line}" for i, line in enumerate(lines))


def decode(data: bytes) -> str:
    """Bytes from a file or a command as text: UTF-8, undecodable bytes as U+FFFD, never a crash."""
    return data.decode("utf-8", errors="replace")


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB marks a binary file, as git and grep decide."""
    return b"\0" in data[:8192]
