"""A tool call's arguments read from the store, and the call on one line: the one the viewer shows
after the tool's name and the one the exports write. Pure functions; here so that the viewer
need not import the export (nor the export the viewer)."""

from __future__ import annotations

import json
import re
from typing import Any

_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


def parse_args(args: str | None) -> dict[str, Any]:
    """An event's `args` (JSON text) as a dict; text that is not a JSON object is kept as-is."""
    if not args:
        return {}
    try:
        value = json.loads(args)
    except ValueError:
        return {"args": args}
    return value if isinstance(value, dict) else {"args": value}


def _first_line(value: Any, limit: int = 160) -> str:
    s = str(value)
    line = s.split("\n", 1)[0]
    return (line[:limit] + "…") if len(line) > limit or "\n" in s else line


def args_summary(tool: str, args: dict[str, Any]) -> str:
    """The call on one line: what a person needs to recognise it."""
    path = args.get("path", args.get("file_path"))
    if tool == "read":
        where = f" {args['offset']}" if "offset" in args else ""
        if "limit" in args:
            where += f" +{args['limit']}"
        return f"{path}{where}"
    if tool == "bash":
        return _first_line(args.get("command", ""))
    if tool in ("edit", "multiedit", "write") and path:
        return str(path)
    if tool == "apply_patch":
        patch = str(args.get("patch", args.get("input", "")))
        return ", ".join(_PATCH_FILE.findall(patch)) or "patch"
    if tool == "recall":
        rest = " ".join(f"{k} {v}" for k, v in args.items() if k != "id")
        return f"{args.get('id', '')} {rest}".strip()
    if tool in ("grep", "glob", "list", "search") and ("pattern" in args or "path" in args):
        return f"{args.get('pattern', '')} {args.get('path', '')}".strip()
    # Any other call: the argument that names what it is about, else all of them.
    for key in ("command", "description", "path", "file_path", "pattern", "query", "url"):
        if isinstance(args.get(key), str):
            return _first_line(args[key])
    return _first_line(json.dumps(args, ensure_ascii=False, sort_keys=True), 200)
