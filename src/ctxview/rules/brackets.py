"""§1, §4, §5 The bracket that opens every result, in each of its forms."""

from __future__ import annotations

import re
from collections.abc import Iterator

# file_change's line read back, with or without its id: `[src/a.py sha 1c9e04ab]`, `[old.md
# deleted]`, `[#e201 a.ts moved to b.ts sha …]`.
FILE_LINE = re.compile(
    r"^\[(?:#[0-9a-f]+ )?(?P<path>\S+)(?: moved to (?P<to>\S+))? (?:sha [0-9a-f]+|deleted)\]"
)


def plain(ref: str) -> str:
    """`[#a3f2]`: the generic result's bracket."""
    return f"[{ref}]"


def read(ref: str, path: str, first: int, last: int, total: int, sha: str) -> str:
    """`[#a3f2 src/app.ts lines 1-200 of 340 sha 1c9e04ab]`."""
    return f"[{ref} {path} lines {first}-{last} of {total} sha {sha}]"


def read_empty(ref: str, path: str, sha: str) -> str:
    """`[#a3f2 notes.txt empty sha e3b0c442]`."""
    return f"[{ref} {path} empty sha {sha}]"


def read_binary(ref: str, path: str, sha: str) -> str:
    return f"[{ref} {path} binary sha {sha}]"


def recall(ref: str, target: str, first: int, last: int, total: int) -> str:
    """`[#d004 recall #c9d0 lines 1-2000 of 3400]`."""
    return f"[{ref} recall {target} lines {first}-{last} of {total}]"


def recall_empty(ref: str, target: str) -> str:
    return f"[{ref} recall {target} empty]"


def file_change(
    path: str, sha: str | None, ref: str | None = None, moved_to: str | None = None
) -> str:
    """An edit's bracket: `[#e201 src/app.ts sha 7d0a91c3]`, `[old.md deleted]` when sha is None,
    and `[src/a.ts moved to src/b.ts sha …]` for a patch's move. Without ref: a patch's file line."""
    head = f"{ref} " if ref else ""
    where = f"{path} moved to {moved_to}" if moved_to else path
    state = "deleted" if sha is None else f"sha {sha}"
    return f"[{head}{where} {state}]"


def file_sections(
    lines: list[str], path: str | None
) -> Iterator[tuple[str | None, str | None, list[str]]]:
    """An edit result's body cut at its file lines (a patch has one per file), as (file line or
    None for what comes before the first, the file's path, its lines): what a diff colours."""
    header: str | None = None
    section: list[str] = []
    for line in lines:
        match = FILE_LINE.match(line)
        if match:
            if header is not None or section:
                yield header, path, section
            header, path, section = line, match.group("to") or match.group("path"), []
        else:
            section.append(line)
    if header is not None or section:
        yield header, path, section


def with_body(bracket: str, body: str) -> str:
    """The bracket, a newline and the body; a bracket alone where there is no body."""
    return f"{bracket}\n{body}" if body else bracket


def with_sentence(bracket: str, sentence: str) -> str:
    """A stub's or an error's form: the bracket and one sentence on the same line."""
    return f"{bracket} {sentence}"
