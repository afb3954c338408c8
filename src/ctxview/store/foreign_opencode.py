"""OpenCode's own SQLite database (`~/.local/share/opencode/opencode.db`, OpenCode 1.x), read
only: its sessions with their messages and parts as the JSON objects OpenCode's storage/ folder
held (FORMATS.md 9: in the database the ids are columns and `data` holds the rest). Here and
not in the importers because only the store room talks SQLite; nothing here knows ctxview's
schema, and nothing is ever written (the file is opened read-only, `mode=ro`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

_TABLES = ("session", "message", "part")


class OpenCodeUnreadable(Exception):
    """The database cannot be read (one sentence)."""


def _connect(path: Path) -> sqlite3.Connection:
    # Read-only, and no waiting on OpenCode's writes longer than a moment (WAL readers do not
    # block on a writer anyway).
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=2.0)
    conn.row_factory = sqlite3.Row
    return conn


def is_opencode(path: Path) -> bool:
    """Whether the SQLite file at `path` has OpenCode's session, message and part tables (with
    the `data` column of the 1.x layout)."""
    try:
        conn = _connect(path)
    except sqlite3.Error:
        return False
    try:
        for table in _TABLES:
            cols = {r["name"] for r in conn.execute(f"PRAGMA table_info({table})")}
            if not cols or (table != "session" and "data" not in cols):
                return False
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def is_blank(path: Path) -> bool:
    """Whether the SQLite file at `path` holds no table yet: a database its program has made
    and not yet given its schema (OpenCode as it starts)."""
    try:
        conn = _connect(path)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _obj(row: sqlite3.Row, ids: dict[str, str]) -> dict[str, Any]:
    """A message's or a part's JSON object: `data` with the id columns put back."""
    try:
        data = json.loads(row["data"]) if row["data"] else {}
    except (ValueError, RecursionError, TypeError):
        data = {"type": "unreadable", "raw": str(row["data"])[:200]}
    if not isinstance(data, dict):
        data = {"type": "unreadable", "raw": str(data)[:200]}
    for key, column in ids.items():
        data.setdefault(key, row[column])
    return data


def read_sessions(path: Path) -> list[dict[str, Any]]:
    """Every session, oldest first: {"info": {id, parentID, directory, title, time}, "messages":
    [{"info": message, "parts": [part, ...]}, ...]}, messages and parts in their id order (OpenCode's
    ids sort by time). Raises OpenCodeUnreadable with one sentence."""
    try:
        conn = _connect(path)
    except sqlite3.Error as exc:
        raise OpenCodeUnreadable(
            f"{path} cannot be opened as OpenCode's database ({exc})."
        ) from None
    try:
        scols = {r["name"] for r in conn.execute("PRAGMA table_info(session)")}
        order = "time_created, id" if "time_created" in scols else "id"
        sessions: dict[str, dict[str, Any]] = {}
        for r in conn.execute(f"SELECT * FROM session ORDER BY {order}"):
            row = dict(r)
            info = {
                "id": row["id"], "parentID": row.get("parent_id"),
                "directory": row.get("directory") or "", "title": row.get("title") or "",
                "time": {"created": row.get("time_created"), "updated": row.get("time_updated")},
            }  # fmt: skip
            sessions[row["id"]] = {"info": info, "messages": []}
        messages: dict[str, dict[str, Any]] = {}
        for r in conn.execute("SELECT * FROM message ORDER BY session_id, id"):
            owner = sessions.get(r["session_id"])
            if owner is None:
                continue
            msg: dict[str, Any] = {
                "info": _obj(r, {"id": "id", "sessionID": "session_id"}),
                "parts": [],
            }
            owner["messages"].append(msg)
            messages[r["id"]] = msg
        for r in conn.execute("SELECT * FROM part ORDER BY message_id, id"):
            owned = messages.get(r["message_id"])
            if owned is not None:
                owned["parts"].append(_obj(r, {"id": "id", "messageID": "message_id",
                                             "sessionID": "session_id"}))  # fmt: skip
        return list(sessions.values())
    except sqlite3.Error as exc:
        raise OpenCodeUnreadable(f"{path} cannot be read as OpenCode's database ({exc}).") from None
    finally:
        conn.close()
