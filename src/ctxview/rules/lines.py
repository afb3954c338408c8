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


def decode(data: bytes | bytearray) -> str:
    """Bytes from a file or a command as text: UTF-8, undecodable bytes as U+FFFD, never a crash."""
    return data.decode("utf-8", errors="replace")


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB marks a binary file, as git and grep decide."""
    return b"\0" in data[:8192]


def window_lines(data: bytes, first: int, limit: int) -> tuple[list[str], int]:
    """Lines `first`..`first + limit - 1` (1-based) of a file's bytes as text, and how many lines
    it has, decoding and splitting only that window: a read of a 200 MB file holds its bytes
    once. The same as `split_lines(decode(data))[first - 1 : first - 1 + limit]`, since a
    `\\n` byte never occurs inside a UTF-8 sequence: decoding line by line replaces the same
    bytes with U+FFFD as decoding the whole."""
    if not data:
        return [], 0
    total = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if first > total:
        return [], total
    start = _line_start(data, first)
    end = _line_start(data, first + limit) if first + limit <= total else len(data)
    return split_lines(decode(data[start:end])), total


def _line_start(data: bytes, n: int) -> int:
    """The offset of line `n`'s first byte (1-based; the line exists): after the n-1th `\\n`.
    Counted a block at a time in C, then found one by one within the block that holds it."""
    need, pos, step = n - 1, 0, 1 << 16
    while need:
        block_end = min(len(data), pos + step)
        found = data.count(b"\n", pos, block_end)
        if found < need:
            need, pos = need - found, block_end
            continue
        for _ in range(need):
            pos = data.index(b"\n", pos) + 1
        need = 0
    return pos
