"""A file's pygments lexer by its name, without pygments' own lookup.

`pygments.lexers.get_lexer_for_filename` compiles the glob of every lexer it knows (~930
patterns) into a regex on the first call of a process and imports every module that matches:
~0.3 s of CPU, most of a small export's time. Here the simple globs (`*.py`, `Makefile`) are
a dict keyed by the name's last extension or the whole name, and only the few others are
matched as globs; the winner is chosen as pygments chooses (an exact name's bonus, the class's
priority, then its name), from the candidates' classes alone. Plugin lexers are not looked up.
"""

from __future__ import annotations

import fnmatch
import re
from functools import cache

from pygments.lexer import Lexer
from pygments.lexers import find_lexer_class_by_name
from pygments.lexers._mapping import LEXERS

_SIMPLE_EXT = re.compile(r"\*\.([^*?\[\].]+)")


@cache
def _tables() -> tuple[dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]],
                       list[tuple[str, str]]]:  # fmt: skip
    """(last extension -> [(alias, glob)], whole name -> [(alias, glob)], [(alias, glob)] of
    the other globs). A lexer is named by its first alias."""
    by_ext: dict[str, list[tuple[str, str]]] = {}
    by_name: dict[str, list[tuple[str, str]]] = {}
    others: list[tuple[str, str]] = []
    for _module, _name, aliases, globs, _mimes in LEXERS.values():
        if not aliases:
            continue
        for glob in globs:
            simple = _SIMPLE_EXT.fullmatch(glob)
            if simple:
                by_ext.setdefault(simple.group(1), []).append((aliases[0], glob))
            elif not any(c in glob for c in "*?["):
                by_name.setdefault(glob, []).append((aliases[0], glob))
            else:
                others.append((aliases[0], glob))
    return by_ext, by_name, others


@cache
def _glob(glob: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(glob))


def _may_match(glob: str, name: str) -> bool:
    """A cheap test before a glob is compiled: its literal head and tail."""
    head = re.split(r"[*?\[]", glob, maxsplit=1)[0]
    tail = re.split(r"[*?\]]", glob)[-1]
    return name.startswith(head) and name.endswith(tail)


@cache
def lexer_class(filename: str) -> type[Lexer] | None:
    """The lexer class pygments would pick for `filename` (a base name), or None."""
    by_ext, by_name, others = _tables()
    candidates = list(by_name.get(filename, ()))
    if "." in filename:
        candidates += by_ext.get(filename.rsplit(".", 1)[1], ())
    candidates += [(alias, glob) for alias, glob in others
                   if _may_match(glob, filename) and _glob(glob).match(filename)]  # fmt: skip
    best: tuple[float, str] | None = None
    chosen = None
    for alias, glob in candidates:
        cls = find_lexer_class_by_name(alias)
        rating = (cls.priority + (0.5 if "*" not in glob else 0), cls.__name__)
        if best is None or rating > best:
            best, chosen = rating, cls
    return chosen
