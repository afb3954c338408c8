"""apply_patch: the `*** Begin Patch` envelope parsed and applied in memory. Pure: no files here."""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxview.tools.errors import ToolError

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, UPDATE, DELETE, MOVE = (
    "*** Add File: ",
    "*** Update File: ",
    "*** Delete File: ",
    "*** Move to: ",
)
END_OF_FILE = "*** End of File"


@dataclass
class Chunk:
    header: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    at_end: bool = False


@dataclass
class FileOp:
    kind: str  # add | update | delete
    path: str
    move_to: str | None = None
    content: str = ""  # add: the + lines, each ending in \n
    chunks: list[Chunk] = field(default_factory=list)


def _bad(detail: str) -> ToolError:
    return ToolError("error.bad_patch", detail=detail)


def parse(patch: str) -> list[FileOp]:
    if not isinstance(patch, str):
        raise ToolError("error.bad_args", detail="patch must be a string")
    lines = patch.strip("\n").split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not lines or lines[0].strip() != BEGIN:
        raise _bad(f"it must start with {BEGIN!r}")
    if lines[-1].strip() != END:
        raise _bad(f"it must end with {END!r}")
    ops: list[FileOp] = []
    body, i = lines[1:-1], 0
    while i < len(body):
        line = body[i]
        if line.startswith(ADD):
            op = FileOp("add", line[len(ADD) :].strip())
            i += 1
            added: list[str] = []
            while i < len(body) and not body[i].startswith("*** "):
                if not body[i].startswith("+"):
                    raise _bad(f"line {i + 2}: an added file's lines must start with '+'")
                added.append(body[i][1:] + "\n")
                i += 1
            op.content = "".join(added)
            ops.append(op)
        elif line.startswith(DELETE):
            ops.append(FileOp("delete", line[len(DELETE) :].strip()))
            i += 1
        elif line.startswith(UPDATE):
            op = FileOp("update", line[len(UPDATE) :].strip())
            i += 1
            if i < len(body) and body[i].startswith(MOVE):
                op.move_to = body[i][len(MOVE) :].strip()
                i += 1
            chunk: Chunk | None = None
            while i < len(body) and not (
                body[i].startswith("*** ") and body[i].strip() != END_OF_FILE
            ):
                text = body[i]
                if text.startswith("@@"):
                    chunk = Chunk(text[2:].strip() or None)
                    op.chunks.append(chunk)
                elif text.strip() == END_OF_FILE:
                    if chunk is None:
                        raise _bad(f"line {i + 2}: '{END_OF_FILE}' outside a hunk")
                    chunk.at_end = True
                else:
                    if chunk is None:  # the first hunk may come without its @@ line
                        chunk = Chunk(None)
                        op.chunks.append(chunk)
                    mark, rest = (text[0], text[1:]) if text else (" ", "")
                    if mark == " ":
                        chunk.old.append(rest)
                        chunk.new.append(rest)
                    elif mark == "-":
                        chunk.old.append(rest)
                    elif mark == "+":
                        chunk.new.append(rest)
                    else:
                        raise _bad(f"line {i + 2}: a hunk line must start with ' ', '-' or '+'")
                i += 1
            if not op.chunks and not op.move_to:
                raise _bad(f"the update of {op.path} has no hunks")
            ops.append(op)
        elif not line.strip():
            i += 1
        else:
            raise _bad(f"line {i + 2} is not a file operation: {line[:60]!r}")
    if not ops:
        raise _bad("it changes no file")
    for op in ops:
        if not op.path:
            raise _bad("a file operation has no path")
    return ops


def apply_chunks(text: str, chunks: list[Chunk], path: str) -> str:
    """The file's new text after its hunks, each found at or after the one before it.

    Lines are matched without their `\r`; the lines the file keeps keep their own line ends, and
    the lines the patch brings get the file's usual one (`\r\n` in a CRLF file)."""
    ends_with_newline = text.endswith("\n") or text == ""
    raw = text.split("\n")
    if text.endswith("\n"):
        raw.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in raw]
    cr = "\r" if text.count("\r\n") * 2 > text.count("\n") else ""
    cursor = 0
    for chunk in chunks:
        if chunk.header is not None:
            found = _seek(lines, [chunk.header], cursor, False)
            if found is None:
                raise _bad(f"the context {chunk.header!r} is not in {path}")
            cursor = found + 1
        new_raw = [line + cr for line in chunk.new]
        if not chunk.old:
            at = len(lines) if chunk.header is None else cursor
            lines[at:at] = chunk.new
            raw[at:at] = new_raw
            cursor = at + len(chunk.new)
            continue
        found = _seek(lines, chunk.old, cursor, chunk.at_end)
        if found is None:
            first = chunk.old[0] if chunk.old else ""
            raise _bad(f"the lines to change (from {first[:60]!r}) are not in {path}")
        end = found + len(chunk.old)
        if lines[found:end] == chunk.new:  # nothing changes here: keep the bytes as they are
            new_raw = raw[found:end]
        lines[found:end] = chunk.new
        raw[found:end] = new_raw
        cursor = found + len(chunk.new)
    out = "\n".join(raw)
    return out + "\n" if (raw and ends_with_newline) else out


def _seek(lines: list[str], want: list[str], start: int, at_end: bool) -> int | None:
    """Where `want` stands in `lines` from `start`: exactly, then ignoring trailing, then all
    surrounding white space (models often get indentation of blank lines wrong)."""
    n = len(want)
    starts = [len(lines) - n] if at_end else range(start, len(lines) - n + 1)
    for norm in (lambda s: s, str.rstrip, str.strip):
        target = [norm(w) for w in want]
        for i in starts:
            if i >= 0 and [norm(x) for x in lines[i : i + n]] == target:
                return i
    return None
