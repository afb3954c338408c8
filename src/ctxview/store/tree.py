"""A session tree: a session and its sub-agents (`parent_session`, recursively) share one id
space, so no id the model sees anywhere in the tree names two results. Each session's own
`next_rid` stays its own (the `events_next_rid` trigger keeps it past its results); the tree's
next id is the largest of its members', so the counter lives in the store with the sessions and
an id is never given twice in the tree, not after compaction, a restart or a crash.

Plain functions of a sqlite3 connection: the writer and the reader run them on their
connection's thread (`connect.on_thread`), the hook engine and the MCP server on their own."""

from __future__ import annotations

import sqlite3


class IdSpace:
    """The next id of a session tree, in memory: every Session of the tree over one writer holds
    the same one (`Writer.id_space`), so ids taken inside a batch (not in the store yet) are
    never given twice; what other writers took comes in through `advance`.

    Each id is taken by an owner (a Session passes its writer: the hook engine's writer of one
    tool call's held events, `held_calls.Held`, is that call's own). Two owners may take ids
    at once in one process (the hook engine answers a call while the import of the last one's
    transcript goes on), so a rewind gives back only its owner's trailing ids: never one taken
    by someone else after it, whose events are not in the store yet."""

    def __init__(self, root: str, next_rid: int) -> None:
        self.root = root
        self.next = next_rid
        self._owner: object = None  # who took the last ids
        self._run_from = next_rid  # the first of them (no other owner's id, no advance since)

    def advance(self, next_rid: int) -> None:
        if next_rid > self.next:
            self.next = next_rid
            self._owner, self._run_from = None, next_rid

    def take(self, owner: object = None) -> int:
        if owner is None or owner is not self._owner:
            self._owner, self._run_from = owner, self.next
        rid = self.next
        self.next += 1
        return rid

    def rewind(self, next_rid: int, owner: object = None) -> None:
        """Back to the store's next id after a step that took ids and did not commit: none is
        skipped. With an `owner`, only the ids it took last go back (not below the first id
        another owner took after, or an advance past); without, every id past `next_rid` does
        (a writer whose steps are one at a time under the tree's lock: none in flight)."""
        floor = -1 if owner is None else (self._run_from if owner is self._owner else self.next)
        target = max(next_rid, floor)
        if target > self.next:
            self.advance(target)
        elif target < self.next:
            self.next = target
            self._owner, self._run_from = None, target


# Deeper than any agent nests; a cycle in hand-made data stops here too.
MAX_DEPTH = 32

_MEMBERS = """
WITH RECURSIVE tree(id, depth) AS (
    SELECT ?1, 0
    UNION
    SELECT s.id, tree.depth + 1 FROM sessions s JOIN tree ON s.parent_session = tree.id
    WHERE tree.depth < ?2
)
"""
_NEXT_SQL = _MEMBERS + "SELECT max(next_rid) FROM sessions WHERE id IN (SELECT id FROM tree)"
_IDS_SQL = _MEMBERS + "SELECT id FROM tree"


def root_of(conn: sqlite3.Connection, session_id: str) -> str:
    """The session at the top of `session_id`'s tree: its parent's parent's ... (a parent not in
    the store yet counts as the top: a sub-agent seen before its parent)."""
    seen = [session_id]
    current = session_id
    for _ in range(MAX_DEPTH):
        row = conn.execute("SELECT parent_session FROM sessions WHERE id = ?",
                           (current,)).fetchone()  # fmt: skip
        if row is None or not row[0] or row[0] in seen:
            return current
        current = row[0]
        seen.append(current)
    return current


def next_rid(conn: sqlite3.Connection, root: str) -> int:
    """The tree's next id: past every id any of its sessions gave (0 when none is stored)."""
    row = conn.execute(_NEXT_SQL, (root, MAX_DEPTH)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def members(conn: sqlite3.Connection, root: str) -> list[str]:
    """The tree's sessions, top first (the root itself even when it is not stored)."""
    return [r[0] for r in conn.execute(_IDS_SQL, (root, MAX_DEPTH)).fetchall()]


def holder(conn: sqlite3.Connection, session_id: str, rid: int) -> str | None:
    """The session of `session_id`'s tree holding result `rid`: its own when it has one (a store
    written before ids were shared may have the id in two sessions), else another member's."""
    if conn.execute("SELECT 1 FROM events WHERE session = ? AND rid = ?",
                    (session_id, rid)).fetchone():  # fmt: skip
        return session_id
    for sid in members(conn, root_of(conn, session_id)):
        if (
            sid != session_id
            and conn.execute(
                "SELECT 1 FROM events WHERE session = ? AND rid = ?", (sid, rid)
            ).fetchone()
        ):
            return sid
    return None


def call_holder(conn: sqlite3.Connection, root: str, call_ref: str) -> str | None:
    """The session of the tree whose result answers call `call_ref`, or None."""
    for sid in members(conn, root):
        if conn.execute(
            "SELECT 1 FROM events WHERE session = ? AND kind = 'result' AND call_ref = ? LIMIT 1",
            (sid, call_ref),
        ).fetchone():
            return sid
    return None
