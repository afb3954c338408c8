"""list, glob and grep over the workspace: plain text outputs, sorted so a re-run compares equal."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from .errors import ToolError
from .workspace import Workspace

# Folders nobody wants listed or searched; a pattern naming one still reaches into it.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache"})  # fmt: skip
MAX_GREP_FILE = 10 * 1024 * 1024


def _walk(root: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        yield Path(folder), dirs, sorted(files)


def list_dir(ws: Workspace, path: str = ".") -> str:
    """Every file and folder below `path`, one per line, folders ending in `/`."""
    base = ws.resolve(path)
    if not base.is_dir():
        raise ToolError("error.not_directory" if base.exists() else "error.no_file", path=path)
    out: list[str] = []
    for folder, dirs, files in _walk(base):
        rel = folder.relative_to(base)
        out.extend(f"{(rel / d).as_posix()}/" for d in dirs)
        out.extend((rel / f).as_posix() for f in files)
    return "\n".join(sorted(out)) or "(empty folder)"


def glob(ws: Workspace, pattern: str, path: str = ".") -> str:
    """Files matching `pattern` (`**` crosses folders), workspace-relative, sorted."""
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("error.bad_args", detail="pattern must be a non-empty string")
    base = ws.resolve(path)
    if not base.is_dir():
        raise ToolError("error.not_directory" if base.exists() else "error.no_file", path=path)
    rx = _glob_regex(pattern)
    hits = []
    for folder, _dirs, files in _walk(base):
        for name in files:
            rel = (folder / name).relative_to(base).as_posix()
            if rx.fullmatch(rel):
                hits.append(ws.relative(folder / name))
    return "\n".join(sorted(hits)) or "No files match."


def grep(
    ws: Workspace,
    pattern: str,
    path: str = ".",
    include: str | None = None,
    ignore_case: bool = False,
) -> str:
    """Lines matching the regular expression, as `path:line: text`, files in path order."""
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("error.bad_args", detail="pattern must be a non-empty string")
    try:
        rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError("error.bad_regex", detail=str(exc)) from None
    base = ws.resolve(path)
    if base.is_file():
        targets = [base]
    elif base.is_dir():
        targets = [folder / f for folder, _d, files in _walk(base) for f in files]
    else:
        raise ToolError("error.no_file", path=path)
    out: list[str] = []
    for file in targets:
        if include and not fnmatch.fnmatch(file.name, include):
            continue
        try:
            ws.resolve(str(file))  # a link leading out of the workspace is not read (decision 11)
        except ToolError:
            continue
        try:
            info = file.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GREP_FILE:
                continue  # a FIFO would block the search; a huge file is not source
            data = file.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue
        rel = ws.relative(file)
        text = data.decode("utf-8", errors="replace")
        for n, line in enumerate(text.split("\n"), 1):
            if rx.search(line):
                out.append(f"{rel}:{n}: {line.rstrip(chr(13))}")
    return "\n".join(out) or "No matches."


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex: `*` and `?` stay in one folder, `**/` spans any number of them."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                out.append("[" + pattern[i + 1 : end].replace("!", "^", 1) + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    if "/" not in pattern:  # `*.py` matches at any depth, as most agents' glob tools do
        return re.compile("(?:.*/)?" + "".join(out))
    return re.compile("".join(out))
