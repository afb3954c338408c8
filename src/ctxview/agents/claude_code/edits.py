"""What an edit Claude Code reports did to its file: the text before and after, built from what
Claude Code itself says (its hook input's `tool_response` and `tool_input`), never from a file
the input names. Pure functions: the hook engine decides whether a file may be read at all.

Claude Code 2.1.328 reports (sdk-tools.d.ts): Edit `{filePath, oldString, newString,
originalFile, structuredPatch, replaceAll}`; Write `{type, filePath, content, originalFile,
structuredPatch}`; MultiEdit (before 2.1) `{filePath, originalFile, structuredPatch}` with the
edits in its input; NotebookEdit `{notebook_path, original_file, updated_file}`. `originalFile`
is null when the file was new or too large to include."""

from __future__ import annotations

from typing import Any


def edited(name: str, args: dict[str, Any], resp: dict[str, Any]) -> tuple[str | None, str] | None:
    """(text before, None for a new file; text after) of an Edit, MultiEdit or Write, from the
    report alone; None when the report does not tell (the caller may read the file)."""
    original = resp.get("originalFile", resp.get("originalFileContents"))
    original = original if isinstance(original, str) else None
    patch = resp.get("structuredPatch")
    if name == "Write":
        content = resp.get("content", args.get("content"))
        if not isinstance(content, str):
            return None
        if resp.get("type") == "create":
            return None, content
        return (original, content) if original is not None else None
    if original is None:
        return None
    if name == "MultiEdit":
        edits = args.get("edits")
    else:
        old = resp.get("oldString", args.get("old_string"))
        new = resp.get("newString", args.get("new_string"))
        every = resp.get("replaceAll", args.get("replace_all"))
        edits = [{"old_string": old, "new_string": new, "replace_all": every}]
    after = apply_edits(original, edits)
    if after is None and isinstance(patch, list) and patch:
        after = apply_patch(original, patch)  # Claude Code normalised the strings (quotes)
    return (original, after) if after is not None else None


def before_patch(after: str, patch: Any) -> str | None:
    """The text before a `structuredPatch` that made `after` (an edit whose `originalFile`
    Claude Code left out), or None when the patch does not fit it."""
    if not isinstance(patch, list) or not patch:
        return None
    flipped = []
    for hunk in patch:
        if not isinstance(hunk, dict) or not isinstance(hunk.get("lines"), list):
            return None
        lines = [_flip(line) for line in hunk["lines"]]
        if any(line is None for line in lines):
            return None
        flipped.append({"oldStart": hunk.get("newStart"), "oldLines": hunk.get("newLines"),
                        "lines": lines})  # fmt: skip
    return apply_patch(after, flipped)


def _flip(line: Any) -> str | None:
    if not isinstance(line, str) or not line:
        return None
    sign = {"-": "+", "+": "-"}.get(line[0], line[0])
    return sign + line[1:]


def apply_edits(text: str, edits: Any) -> str | None:
    """Claude Code's edits applied to the original in order, or None when one does not apply
    (its string is not there, or it is not a string)."""
    if not isinstance(edits, list) or not edits:
        return None
    for e in edits:
        if not isinstance(e, dict):
            return None
        old, new = e.get("old_string"), e.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        if old == "":
            if text:
                return None
            text = new
            continue
        if old not in text:
            return None
        text = text.replace(old, new) if e.get("replace_all") is True else text.replace(old, new, 1)
    return text


def apply_patch(text: str, patch: list[Any]) -> str | None:
    """A `structuredPatch` (hunks of ` `, `-`, `+` lines, `oldStart` 1-based) applied to
    `text`, or None when a hunk's context or removed lines are not there."""
    lines = text.split("\n")
    out: list[str] = []
    at = 0  # index into `lines` of the next line not yet copied
    for hunk in patch:
        if not isinstance(hunk, dict) or not isinstance(hunk.get("lines"), list):
            return None
        start = hunk.get("oldStart")
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            return None
        # A hunk that only adds lines to an empty stretch names the line before it.
        begin = max(start - 1, 0) if hunk.get("oldLines") != 0 else start
        if begin < at or begin > len(lines):
            return None
        out.extend(lines[at:begin])
        at = begin
        for line in hunk["lines"]:
            if not isinstance(line, str) or not line:
                return None
            sign, body = line[0], line[1:]
            if sign == "+":
                out.append(body)
            elif sign in (" ", "-"):
                if at >= len(lines) or lines[at] != body:
                    return None
                if sign == " ":
                    out.append(body)
                at += 1
            elif sign != "\\":  # "\ No newline at end of file"
                return None
    out.extend(lines[at:])
    return "\n".join(out)
