"""edit and multiedit: new content from old content, all or nothing. Pure: no files here."""

from __future__ import annotations

from typing import Any

from ctxview.tools.errors import ToolError


def replace(text: str, old: object, new: object, replace_all: bool, path: str) -> str:
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolError("error.bad_args", detail="old_string and new_string must be strings")
    if old == new:
        raise ToolError("error.same_strings")
    if old == "":
        raise ToolError("error.bad_args", detail="old_string must not be empty")
    count = text.count(old)
    if count == 0 and "\n" in old and "\r\n" in text and "\r\n" not in old:
        # The model never sees a `\r` (DESIGN decision 2), so in a CRLF file its `\n` means `\r\n`.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError("error.old_not_found", path=path)
    if count > 1 and not replace_all:
        raise ToolError("error.old_not_unique", path=path, count=count)
    return text.replace(old, new) if replace_all else text.replace(old, new, 1)


def apply_edits(text: str, edits: Any, path: str) -> str:
    """multiedit's edits in order, each on the result of the one before; any failure fails all."""
    if not isinstance(edits, list) or not edits:
        raise ToolError("error.bad_args", detail="edits must be a non-empty list")
    for edit in edits:
        if not isinstance(edit, dict):
            raise ToolError("error.bad_args", detail="each edit must be an object")
        text = replace(
            text,
            edit.get("old_string"),
            edit.get("new_string"),
            bool(edit.get("replace_all", False)),
            path,
        )
    return text
