"""DESIGN decision 2: lines, and the binary and text decisions."""

from __future__ import annotations

import pytest

from ctxview.rules.lines import count_lines, decode, looks_binary, numbered, split_lines


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\n\nb\n", ["a", "", "b"]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\rb\n", ["a\rb"]),  # a lone \r is not a line break
    ],
)
def test_split_and_count(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines
    assert count_lines(text) == len(lines)


def test_numbered() -> None:
    assert numbered(["x", "", "z"], 7) == "7: x\n8: \n9: z"
    assert numbered([], 1) == ""


def test_decode_never_fails() -> None:
    assert decode(b"caf\xe9") == "caf\ufffd"
    assert decode("é".encode()) == "é"


def test_binary_is_a_nul_in_the_first_8_kib() -> None:
    assert looks_binary(b"PNG\0")
    assert not looks_binary(b"text\n" * 10)
    assert not looks_binary(b"x" * 8192 + b"\0")
