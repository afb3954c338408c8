"""write, edit, multiedit and apply_patch: the changes an edit makes, and its answer (§5).

Reading the files (`changes_for`) and writing them (`commit`) are the edges; the "changed
outside this session" notes and the answer are pure functions of the changes, the config and
the ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ctxview.engine.result import Result, sha256_text
from ctxview.rules import brackets
from ctxview.rules.cap import cap
from ctxview.rules.config import Config
from ctxview.rules.diff import counts, unified
from ctxview.rules.ids import format_id
from ctxview.rules.lines import count_lines, decode
from ctxview.tools import ToolError
from ctxview.tools import edit as edit_tool
from ctxview.tools import patch as patch_tool
from ctxview.tools.workspace import Workspace, path_arg

EDIT_TOOLS = frozenset({"write", "edit", "multiedit", "apply_patch"})


@dataclass
class Change:
    """One file an edit changes: old text None for a new file, new text None for a deletion.
    `key` (and `dest_key` for a move) is the workspace key the change is written to."""

    path: str
    key: str
    old: str | None
    new: str | None
    old_bytes: bytes | None = None
    moved_to: str | None = None
    dest_key: str | None = None


# Reading: the changes a call asks for, every check passed


def changes_for(tool: str, args: dict[str, Any], ws: Workspace) -> list[Change]:
    """The changes `tool` makes with `args`, read from the workspace and checked; nothing is
    written yet (a failure raises ToolError and leaves the workspace as it was)."""
    if tool == "apply_patch":
        changes = patch_changes(args.get("patch", args.get("input")), ws)
    else:
        path = path_arg(args.get("path", args.get("file_path")))
        key, old_bytes = ws.read_text_or_none(path)
        if tool == "write":
            content = args.get("content")
            if not isinstance(content, str):
                raise ToolError("error.bad_args", detail="content must be a string")
            old = decode(old_bytes) if old_bytes is not None else None
            changes = [Change(path, key, old, content, old_bytes)]
        else:
            if old_bytes is None:
                raise ToolError("error.no_file", path=path)
            old = _strict_text(old_bytes, path)
            if tool == "edit":
                new = edit_tool.replace(old, args.get("old_string"),
                                        args.get("new_string"),
                                        bool(args.get("replace_all", False)), path)  # fmt: skip
            else:
                new = edit_tool.apply_edits(old, args.get("edits"), path)
            changes = [Change(path, key, old, new, old_bytes)]
    for ch in changes:
        if ch.new is not None and not _encodable(ch.new):
            raise ToolError("error.bad_args", detail="the new text is not valid Unicode "
                            "(it holds a lone surrogate)")  # fmt: skip
    return changes


def patch_changes(patch: Any, ws: Workspace) -> list[Change]:
    """apply_patch's operations in order, each on the patch's own view of the files so far."""
    ops = patch_tool.parse(patch)
    state: dict[str, str | None] = {}  # the patch's view of each file (by key) as it goes
    originals: dict[str, bytes | None] = {}
    changes: list[Change] = []

    lossy: set[str] = set()  # files on disk that are not UTF-8: an update would mangle them

    def current(key: str, path: str) -> str | None:
        if key not in state:
            data = ws.load(key, path)
            originals[key] = data
            text = state[key] = None if data is None else decode(data)
            if data is not None and text is not None and "\ufffd" in text and not _is_utf8(data):
                lossy.add(key)
        return state[key]

    for op in ops:
        key = ws.resolve(op.path)
        old = current(key, op.path)
        if op.kind == "add":
            if old is not None:
                raise ToolError("error.bad_patch", detail=f"{op.path} already exists")
            state[key] = op.content
            lossy.discard(key)
            changes.append(Change(op.path, key, None, op.content))
        elif op.kind == "delete":
            if old is None:
                raise ToolError("error.no_file", path=op.path)
            state[key] = None
            changes.append(Change(op.path, key, old, None, originals.get(key)))
        else:
            if old is None:
                raise ToolError("error.no_file", path=op.path)
            if key in lossy:
                raise ToolError("error.not_utf8", path=op.path)
            new = patch_tool.apply_chunks(old, op.chunks, op.path)
            if op.move_to:
                dest = ws.resolve(op.move_to)
                if current(dest, op.move_to) is not None:
                    raise ToolError("error.bad_patch", detail=f"{op.move_to} already exists")
                state[key], state[dest] = None, new
                changes.append(Change(op.path, key, old, new, originals.get(key),
                                      moved_to=op.move_to, dest_key=dest))  # fmt: skip
            else:
                state[key] = new
                changes.append(Change(op.path, key, old, new, originals.get(key)))
    return changes


# Writing


def commit(changes: list[Change], ws: Workspace) -> None:
    """Write the new contents; every check has already passed, so the change is all or nothing.
    Each file is replaced atomically and never through a link (`safe_fs`)."""
    for ch in changes:
        if ch.new is not None:
            ws.write_text(ch.dest_key or ch.key, ch.new)
        if ch.new is None or ch.dest_key is not None:
            ws.delete(ch.key)


# The answer: pure


def outside_notes(changes: list[Change], known: dict[str, tuple[str, int]],
                  config: Config) -> list[str]:  # fmt: skip
    """A note when a file changed on disk since this session last saw it (§5's tool note);
    `known` maps a file's key to the (sha, id) of the newest content the session saw there."""
    notes = []
    for ch in changes:
        if ch.old_bytes is None or ch.key not in known:
            continue
        sha, rid = known[ch.key]
        if hashlib.sha256(ch.old_bytes).hexdigest() != sha:
            notes.append(config.text("text.changed_outside", path=ch.path,
                                     ref=format_id(rid, config["ids.digits"])))  # fmt: skip
    return notes


def edit_result(rid: int, tool: str, changes: list[Change], notes: list[str],
                config: Config) -> Result:  # fmt: skip
    """§5: the bracket with the path and the new content's hash, then the diff; the notes
    follow. Its data's "files" say what each file became (see `remember`)."""
    ref = format_id(rid, config["ids.digits"])
    sha_digits = config["sha_digits"]
    parts: list[str] = []
    files: list[dict[str, Any]] = []
    added = removed = 0
    for ch in changes:
        new_sha = None if ch.new is None else sha256_text(ch.new)
        bracket = brackets.file_change(ch.path, new_sha[:sha_digits] if new_sha else None,
                                       moved_to=ch.moved_to)  # fmt: skip
        if ch.new is None:
            parts.append(bracket)
            diff = unified(ch.old or "", "")
            kind = "deleted"
        elif ch.old is None:
            n = count_lines(ch.new)
            sentence = (config.text("text.created_one") if n == 1
                        else config.text("text.created", n=n))  # fmt: skip
            parts.append(brackets.with_sentence(bracket, sentence))
            diff = unified("", ch.new)
            kind = "created"
        else:
            diff = unified(ch.old, ch.new)
            parts.append(
                brackets.with_body(bracket, diff)
                if diff
                else brackets.with_sentence(bracket, config["text.no_change"])
            )
            kind = "moved" if ch.moved_to else "edit"
        plus, minus = counts(diff)
        added, removed = added + plus, removed + minus
        files.append({"path": ch.moved_to or ch.path, "from": ch.path if ch.moved_to else None,
                      "sha": new_sha, "kind": kind, "added": plus, "removed": minus,
                      "key": ch.dest_key or ch.key,
                      "from_key": ch.key if ch.dest_key else None})  # fmt: skip
    data = {"files": files, "added": added, "removed": removed}
    if len(changes) == 1:
        # One file: the id joins that file's bracket, `[#e201 src/app.ts sha 7d0a91c3]`.
        first, _, rest = parts[0].partition("\n")
        head = "[" + ref + " " + first[1:]
        body = "\n".join(filter(None, [rest, *notes]))
        rkind = files[0]["kind"]
        f0 = files[0]
        facts = {"path": f0["path"], "sha": f0["sha"]}
    else:
        head = brackets.plain(ref)
        body = "\n".join([*parts, *notes])
        rkind = "patch"
        facts = {}
    capped = cap(body, ref, config) if body else None
    shown = brackets.with_body(head, capped.text if capped else body)
    return Result(rid, tool, shown, body, rkind, capped=capped is not None,
                  elided_lines=capped.elided if capped else None, data=data,
                  **facts)  # fmt: skip


def remember(known: dict[str, tuple[str, int]], files: list[dict[str, Any]], rid: int) -> None:
    """Update `known` (key -> (sha, id)) with what an edit's files became, in order: a moved
    file is gone from its old key, a deleted one from its key, a written one is the new text.
    Used live after each edit and by `Session.resume` over the stored results."""
    for f in files:
        if f.get("from_key"):
            known.pop(f["from_key"], None)
        key = f.get("key")
        if not key:  # a stored file entry without its key (older data) says nothing
            continue
        if f.get("sha"):
            known[key] = (f["sha"], rid)
        else:
            known.pop(key, None)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strict_text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError("error.not_utf8", path=path) from None
