"""Paths resolve inside the session's workspace; `..`, absolute paths or links leading out are refused.

A path becomes a key (`Workspace.resolve`): the workspace-relative real path, with links inside
the workspace followed and `..` applied, or a refusal. Files are then read, written and deleted
by key through `safe_fs`, which opens every component from the workspace's directory fd without
following links: a key holds no link, so a link found there later is a swap, and the call fails
rather than reach outside (issue 8).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ctxview.files import safe_fs
from ctxview.tools.errors import ToolError


def path_arg(path: object) -> str:
    """A tool's path argument as it must be, a non-empty string without NUL, or a ToolError."""
    if not isinstance(path, str) or not path:
        raise ToolError("error.bad_args", detail="path must be a non-empty string")
    if "\0" in path:
        raise ToolError("error.bad_args", detail="path must not hold a NUL character")
    return path


class Workspace:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))
        self.real = str(self.root)  # the same, as a str for os calls

    def resolve(self, path: object) -> str:
        """The key of `path` in the workspace (`.` for the root), or a ToolError when it leads
        outside. Only names are worked out here; nothing is opened through what it finds."""
        path = path_arg(path)
        real = os.path.realpath(path if os.path.isabs(path) else os.path.join(self.real, path))
        if real == self.real:
            return "."
        if not real.startswith(self.real + os.sep):
            raise ToolError("error.outside", path=path)
        return real[len(self.real) + 1 :].replace(os.sep, "/")

    def key(self, path: str) -> str:
        """The key the rules compare a read or an edit of `path` by: `resolve`'s inside the
        workspace, else the real absolute path (a file outside may still be read by a host)."""
        try:
            return self.resolve(path)
        except ToolError:
            return os.path.realpath(path)

    def load(self, key: str, path: str) -> bytes | None:
        """The file's bytes, or None when there is none; `path` names it in an error."""
        try:
            return safe_fs.read(self.real, key)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise ToolError("error.is_directory", path=path) from None
        except safe_fs.NotRegularError:  # a FIFO or a device would block or never end
            raise ToolError("error.not_regular", path=path) from None

    def read_bytes(self, path: str) -> tuple[str, bytes]:
        key = self.resolve(path)
        data = self.load(key, path)
        if data is None:
            raise ToolError("error.no_file", path=path)
        return key, data

    def read_text_or_none(self, path: str) -> tuple[str, bytes | None]:
        """The file's bytes, or None when there is no file (an edit tool creates it)."""
        key = self.resolve(path)
        return key, self.load(key, path)

    def kind(self, key: str) -> str | None:
        """'dir', 'file' (a regular one), 'other', or None when missing; a link is not followed."""
        st = safe_fs.lstat(self.real, key)
        if st is None:
            return None
        if stat.S_ISDIR(st.st_mode):
            return "dir"
        return "file" if stat.S_ISREG(st.st_mode) else "other"

    def write_text(self, key: str, text: str) -> None:
        safe_fs.write(self.real, key, text.encode("utf-8"))

    def delete(self, key: str) -> None:
        safe_fs.unlink(self.real, key)
