"""Syntax colour with pygments for a window of lines at a time, never a whole transcript."""

from __future__ import annotations

from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound
from rich.style import Style
from rich.syntax import PygmentsSyntaxTheme
from rich.text import Text


@lru_cache(maxsize=256)
def lexer_for(path: str | None) -> Lexer | None:
    """The lexer for a file's name; None for plain text or an unknown kind of file."""
    if not path:
        return None
    try:
        lexer = get_lexer_for_filename(path.rsplit("/", 1)[-1], stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return None if lexer.name == "Text only" else lexer


@lru_cache(maxsize=128)
def lexer_for_language(language: str) -> Lexer | None:
    """The lexer for a code fence's language (`py`, `typescript`, `sh`), None when unknown."""
    try:
        lexer = get_lexer_by_name(language.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return None if lexer.name == "Text only" else lexer


@lru_cache(maxsize=16)
def _theme(style: str) -> PygmentsSyntaxTheme:
    try:
        return PygmentsSyntaxTheme(style)
    except Exception:
        return PygmentsSyntaxTheme("default")


@lru_cache(maxsize=4096)
def _token_style(style: str, token: tuple[str, ...]) -> Style:  # a pygments _TokenType
    s = _theme(style).get_style_for_token(token)
    # Foreground only: the transcript's own background (and a diff's) shows through.
    return Style(color=s.color, bold=s.bold, italic=s.italic)


def highlight_lines(lines: list[str], path: str | None, style: str) -> list[Text] | None:
    """The lines coloured as code of `path`'s language; None when there is no lexer for it."""
    lexer = lexer_for(path)
    if lexer is None:
        return None
    return _highlight(lines, lexer, style)


def highlight_code(lines: list[str], language: str, style: str) -> list[Text] | None:
    """The lines coloured as code in `language` (a fence's info); None when it is unknown."""
    lexer = lexer_for_language(language) if language else None
    if lexer is None:
        return None
    return _highlight(lines, lexer, style)


def _highlight(lines: list[str], lexer: Lexer, style: str) -> list[Text]:
    code = "\n".join(lines)
    out: list[Text] = [Text(end="")]
    for token, value in lexer.get_tokens(code):
        tstyle = _token_style(style, token)
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                out.append(Text(end=""))
            if part:
                out[-1].append(part, tstyle)
    # get_tokens may add a final newline; keep exactly one Text per line.
    return (out + [Text(end="")] * len(lines))[: len(lines)]
