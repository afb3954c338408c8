"""Paths resolve inside the session's workspace; `..`, absolute paths or links leading out are refused."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ToolError


class Workspace:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))

    def resolve(self, path: str) -> Path:
        """The real path of `path` in the workspace, or a ToolError when it leads outside."""
        if not isinstance(path, str) or not path:
            raise ToolError("error.bad_args", detail="path must be a non-empty string")
        if "\0" in path:
            raise ToolError("error.bad_args", detail="path must not hold a NUL character")
        candidate = Path(path) if os.path.isabs(path) else self.root / path
        real = Path(os.path.realpath(candidate))
        if real != self.root and self.root not in real.parents:
            raise ToolError("error.outside", path=path)
        return real

    def relative(self, real: Path) -> str:
        """The workspace-relative form, `.` for the root: the key a path is compared by."""
        rel = real.relative_to(self.root).as_posix()
        return rel or "."

    def read_bytes(self, path: str) -> tuple[Path, bytes]:
        real = self.resolve(path)
        if real.is_dir():
            raise ToolError("error.is_directory", path=path)
        if real.exists() and not real.is_file():  # a FIFO or a device would block or never end
            raise ToolError("error.not_regular", path=path)
        try:
            return real, real.read_bytes()
        except FileNotFoundError:
            raise ToolError("error.no_file", path=path) from None

    def read_text_or_none(self, path: str) -> tuple[Path, bytes | None]:
        """The file's bytes, or None when there is no file (an edit tool creates it)."""
        real = self.resolve(path)
        if real.is_dir():
            raise ToolError("error.is_directory", path=path)
        if real.exists() and not real.is_file():
            raise ToolError("error.not_regular", path=path)
        try:
            return real, real.read_bytes()
        except FileNotFoundError:
            return real, None
