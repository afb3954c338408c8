"""The store's reader: one long-lived connection; list queries never load bodies."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiosqlite

from ctxview.store import requests, tree
from ctxview.store.connect import (
    fetch_all,
    identity,
    on_thread,
    open_connection,
    sidecars,
    tidy_after_read,
)
from ctxview.store.records import EVENT_COLUMNS, SESSION_COLUMNS, Body, Event, SessionRow
from ctxview.store.schema import StoreError
from ctxview.store.search import Hit, fts_query
from ctxview.store.search import search as search_events

_EVENT_SELECT = f"SELECT session, seq, {', '.join(EVENT_COLUMNS)} FROM events"

# Reader.outline's columns: enough to lay out and link a transcript of 100,000 results.
OUTLINE_COLUMNS = ("seq", "kind", "role", "tool", "call_ref", "rid", "rkind", "points_to",
                   "capped", "shown_lines", "stored_lines", "text_lines")  # fmt: skip
OUTLINE_SELECT = (*OUTLINE_COLUMNS[:-1], "CASE WHEN kind IN ('message', 'compaction') THEN "
                  "length(text) - length(replace(text, char(10), '')) + 1 END")  # fmt: skip

# Per-session figures, from the events: results, compactions, what the rules saved.
_SESSION_TEMPLATE = f"""
SELECT {", ".join("s." + c for c in SESSION_COLUMNS)},
       coalesce(f.results, 0), coalesce(f.events, 0), coalesce(f.compactions, 0),
       coalesce(f.shown, 0), coalesce(f.stored, 0), coalesce(f.saved, 0), coalesce(f.seen, 0),
       coalesce(f.last_seq, 0), {{lease}}
FROM sessions s LEFT JOIN (
    SELECT session,
           count(rid) AS results,
           count(*) AS events,
           sum(kind = 'compaction') AS compactions,
           sum(shown_chars) AS shown,
           sum(stored_chars) AS stored,
           sum(CASE WHEN (capped OR rkind IN ('unchanged', 'same')) AND stored_chars > shown_chars
                    THEN stored_chars - shown_chars ELSE 0 END) AS saved,
           sum(coalesce(seen_chars, 0)) AS seen,
           max(seq) AS last_seq
    FROM events GROUP BY session
) f ON f.session = s.id
"""
_SESSION_SELECT = _SESSION_TEMPLATE.format(lease="s.lease_until")


def _session(row: tuple[Any, ...]) -> SessionRow:
    n = len(SESSION_COLUMNS)
    s = SessionRow(*row[:n])
    (s.results, s.events, s.compactions, s.chars_shown, s.chars_stored, s.chars_saved,
     s.chars_seen, s.last_seq, s.lease_until) = row[n:]  # fmt: skip
    return s


def _event(row: tuple[Any, ...]) -> Event:
    return Event.from_row(row[0], row[1], row[2:])


class Reader:
    """Reads the store, read-only: it never writes, and leaves no -wal or -shm it made behind.
    Keep one open: open/close per poll makes -wal/-shm come and go."""

    def __init__(
        self,
        conn: aiosqlite.Connection,
        path: Path,
        *,
        before: tuple[bool, bool] = (True, True),
        opened: tuple[int, int] | None = None,
    ) -> None:
        self._conn = conn
        self.path = path
        self._before = before  # whether -wal and -shm were there before this reader opened
        self.identity = opened  # (device, inode) of the file this reader has open
        self._session_sql: str | None = None

    @classmethod
    async def open(cls, path: Path | str) -> Reader:
        path = Path(path)
        before = sidecars(path)
        opened = identity(path)
        conn = await open_connection(path, create=False)
        return cls(conn, path, before=before, opened=opened)

    async def close(self) -> None:
        await self._conn.close()
        await asyncio.to_thread(tidy_after_read, self.path, self._before, self.identity)

    async def __aenter__(self) -> Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def api_request_rows(self, session_id: str) -> requests.StoredRequests:
        """The API requests Claude Code recorded for the session, as stored (schema 5; empty
        when its transcript had none): `context.requests.rebuild_stored` rebuilds them."""
        return await on_thread(self._conn, requests.read, session_id)

    async def api_cost(self, session_id: str) -> dict[str, Any] | None:
        """The transcript's own last cost-state record, or None."""
        return await on_thread(self._conn, requests.read_cost, session_id)

    async def proxy_records(self, session_id: str) -> list[Any]:
        """What `ctxview proxy` recorded of the session's requests, in order (schema 6; items
        are `store.proxy_records.ProxyRow`)."""
        from ctxview.store import proxy_records

        return await on_thread(self._conn, proxy_records.read, session_id)

    async def proxy_texts(self, session_id: str, rids: list[int]) -> dict[int, str]:
        """Stored texts by id: the blocks `ctxview proxy --elide` sent as stubs."""
        from ctxview.store import proxy_records

        return await on_thread(self._conn, proxy_records.read_texts, session_id, rids)

    async def proxy_sessions(self) -> list[tuple[str, int, float]]:
        """Sessions with proxied requests: (id, requests, last started), newest first."""
        from ctxview.store import proxy_records

        return await on_thread(self._conn, proxy_records.sessions)

    async def data_version(self) -> int:
        """Changes whenever another connection commits: the cheap "did anything commit?" check."""
        async with self._conn.execute("PRAGMA data_version") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # Sessions

    async def _sessions_sql(self) -> str:
        """The list query; an older store read as it is (nobody may write it, so it was not
        migrated) has no lease column: its sessions are never live."""
        if self._session_sql is None:
            cols = {r[1] for r in await fetch_all(self._conn, "PRAGMA table_info(sessions)")}
            lease = "s.lease_until" if "lease_until" in cols else "NULL"
            self._session_sql = _SESSION_TEMPLATE.format(lease=lease)
        return self._session_sql

    async def sessions(self) -> list[SessionRow]:
        """All sessions, newest first."""
        sql = await self._sessions_sql() + " ORDER BY s.started DESC, s.id"
        return [_session(r) for r in await fetch_all(self._conn, sql)]

    async def session(self, session_id: str) -> SessionRow | None:
        sql = await self._sessions_sql() + " WHERE s.id = ?"
        rows = await fetch_all(self._conn, sql, (session_id,))
        return _session(rows[0]) if rows else None

    async def session_head(self, session_id: str) -> tuple[str, float | None, float | None] | None:
        """(title, ended, lease_until) of a session: what a viewer's title line follows, without
        the figures `session` sums over its events."""
        await self._sessions_sql()  # learns whether the store has the lease column
        lease = "lease_until" if "s.lease_until" in (self._session_sql or "") else "NULL"
        rows = await fetch_all(
            self._conn, f"SELECT title, ended, {lease} FROM sessions WHERE id = ?", (session_id,)
        )
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    async def hooked_open_sessions(self, limit: int = 10) -> list[tuple[str, str, int]]:
        """The newest Claude Code sessions the hooks record that have not ended (a sub-agent is
        its session's, not one of them): (id, workspace, sub-agents not ended)."""
        rows = await self._conn.execute_fetchall(
            "SELECT s.id, s.workspace, (SELECT count(*) FROM sessions c WHERE "
            "c.parent_session = s.id AND c.ended IS NULL) FROM sessions s "
            "WHERE s.source = 'claude-code' AND s.ended IS NULL AND s.parent_session IS NULL "
            "AND json_extract(s.data, '$.hooked') ORDER BY s.started DESC LIMIT ?",
            (limit,),
        )
        return [(r[0], r[1], int(r[2])) for r in rows]

    async def resolve_session(self, ref: str | None) -> SessionRow:
        """A session by id or unique id prefix; the newest when `ref` is None."""
        if ref is None:
            rows = await fetch_all(
                self._conn,
                # A sub-agent belongs to its parent: the newest top-level session comes first.
                "SELECT id FROM sessions ORDER BY parent_session IS NOT NULL, started DESC, "
                "rowid DESC LIMIT 1",
            )
            if not rows:
                raise StoreError(f"The store at {self.path} has no sessions yet.")
            found = await self.session(rows[0][0])
            assert found is not None
            return found
        exact = await self.session(ref)
        if exact:
            return exact
        rows = await fetch_all(
            self._conn,
            "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
            (ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        )
        if not rows:
            raise StoreError(f"There is no session {ref} in the store.")
        if len(rows) > 1:
            raise StoreError(f"More than one session starts with {ref}; give more of its id.")
        found = await self.session(rows[0][0])
        assert found is not None
        return found

    # Events

    async def events(
        self, session_id: str, after: int = 0, limit: int | None = None
    ) -> list[Event]:
        """The session's events past sequence number `after`, in order, without bodies."""
        sql = _EVENT_SELECT + " WHERE session = ? AND seq > ? ORDER BY seq"
        params: tuple[Any, ...] = (session_id, after)
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        return [_event(r) for r in await fetch_all(self._conn, sql, params)]

    async def events_of_kind(self, session_id: str, kind: str, after: int = 0) -> list[Event]:
        """The session's events of one kind past `after`, in order (an index on session, kind)."""
        rows = await fetch_all(
            self._conn,
            _EVENT_SELECT + " WHERE session = ? AND kind = ? AND seq > ? ORDER BY seq",
            (session_id, kind, after),
        )
        return [_event(r) for r in rows]

    async def events_range(self, session_id: str, first: int, last: int) -> list[Event]:
        rows = await fetch_all(
            self._conn,
            _EVENT_SELECT + " WHERE session = ? AND seq BETWEEN ? AND ? ORDER BY seq",
            (session_id, first, last),
        )
        return [_event(r) for r in rows]

    async def last_seq(self, session_id: str) -> int:
        rows = await fetch_all(
            self._conn, "SELECT coalesce(max(seq), 0) FROM events WHERE session = ?", (session_id,)
        )
        return int(rows[0][0])

    async def result(self, session_id: str, rid: int) -> Event | None:
        rows = await fetch_all(
            self._conn, _EVENT_SELECT + " WHERE session = ? AND rid = ?", (session_id, rid)
        )
        return _event(rows[0]) if rows else None

    async def tree_holder(self, session_id: str, rid: int) -> str | None:
        """The session of `session_id`'s tree (it, its sub-agents, its parent: one id space,
        `store/tree.py`) that holds result `rid`: its own first; None when none does."""
        return await on_thread(self._conn, tree.holder, session_id, rid)

    async def pointing_at(self, session_id: str, rid: int) -> list[Event]:
        """The stubs and recalls that point back at a result."""
        rows = await fetch_all(
            self._conn,
            _EVENT_SELECT + " WHERE session = ? AND points_to = ? ORDER BY seq",
            (session_id, rid),
        )
        return [_event(r) for r in rows]

    async def path_events(self, session_id: str, path: str) -> list[Event]:
        """One file's reads, edits and stubs, in order: the chain a path leaves."""
        rows = await fetch_all(
            self._conn,
            _EVENT_SELECT + " WHERE session = ? AND path = ? AND kind = 'result' ORDER BY seq",
            (session_id, path),
        )
        return [_event(r) for r in rows]

    async def facets(self, session_id: str) -> dict[str, list[tuple[str, int, int]]]:
        """For the command palette: per path and per tool, (name, results, newest id)."""
        out: dict[str, list[tuple[str, int, int]]] = {}
        for column in ("path", "tool"):
            rows = await fetch_all(
                self._conn,
                f"SELECT {column}, count(*), max(rid) FROM events WHERE session = ? "
                f"AND kind = 'result' AND {column} IS NOT NULL GROUP BY {column}",
                (session_id,),
            )
            out[column] = [(r[0], int(r[1]), int(r[2])) for r in rows]
        return out

    async def recent_calls(self, session_id: str, limit: int = 500) -> list[tuple[Any, ...]]:
        """The newest `limit` results, newest first, as (rid, tool, rkind, path, args JSON of
        their call): what the command palette matches a typed word against."""
        rows = await fetch_all(
            self._conn,
            "SELECT seq, rid, tool, rkind, path, call_ref FROM events "
            "WHERE session = ? AND kind = 'result' ORDER BY seq DESC LIMIT ?",
            (session_id, limit),
        )
        if not rows:
            return []
        calls = await fetch_all(
            self._conn,
            "SELECT call_ref, args FROM events WHERE session = ? AND kind = 'call' AND seq >= ?",
            (session_id, max(0, rows[-1][0] - 2 * limit)),
        )
        args = {c[0]: c[1] for c in calls if c[0]}
        return [(r[1], r[2], r[3], r[4], args.get(r[5])) for r in rows]

    # Bodies

    async def body(self, session_id: str, rid: int) -> Body | None:
        rows = await fetch_all(
            self._conn,
            "SELECT rid, shown, CAST(stored AS TEXT) FROM bodies WHERE session = ? AND rid = ?",
            (session_id, rid),
        )
        return Body(*rows[0]) if rows else None

    async def bodies(self, session_id: str, rids: list[int]) -> dict[int, Body]:
        """Several bodies in one range query (the visible part of a transcript)."""
        if not rids:
            return {}
        marks = ",".join("?" for _ in rids)
        rows = await fetch_all(
            self._conn,
            f"SELECT rid, shown, CAST(stored AS TEXT) FROM bodies WHERE session = ? AND rid IN ({marks})",
            (session_id, *rids),
        )
        return {r[0]: Body(*r) for r in rows}

    # What a long transcript view needs: lean rows to lay out, bodies only for what is shown.

    async def outline(
        self,
        session_id: str,
        *,
        after: int = 0,
        before: int | None = None,
        limit: int | None = None,
    ) -> list[tuple[Any, ...]]:
        """Lean rows (OUTLINE_COLUMNS) past `after`, oldest first, with no text or bodies. With
        `before` and `limit`, the `limit` rows just before `before` (a viewer loads its tail first)."""
        sql = f"SELECT {', '.join(OUTLINE_SELECT)} FROM events WHERE session = ? AND seq > ?"
        params: tuple[Any, ...] = (session_id, after)
        if before is not None:
            sql += " AND seq < ?"
            params += (before,)
        sql += " ORDER BY seq DESC" if limit is not None else " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        rows = await fetch_all(self._conn, sql, params)
        return list(reversed(rows)) if limit is not None else list(rows)

    async def count_kind(self, session_id: str, kind: str, upto: int) -> int:
        """How many events of `kind` the session has up to sequence number `upto`."""
        rows = await fetch_all(
            self._conn,
            "SELECT count(*) FROM events WHERE session = ? AND kind = ? AND seq <= ?",
            (session_id, kind, upto),
        )
        return int(rows[0][0])

    async def shown(self, session_id: str, rids: list[int]) -> dict[int, str]:
        """What the model was given, for several results, without loading their stored text."""
        if not rids:
            return {}
        marks = ",".join("?" for _ in rids)
        rows = await fetch_all(
            self._conn,
            f"SELECT rid, shown FROM bodies WHERE session = ? AND rid IN ({marks})",
            (session_id, *rids),
        )
        return {r[0]: r[1] for r in rows}

    async def search(self, session_id: str, query: str, limit: int = 1000) -> list[int]:
        """Ids of the session's stored results that match `query` (FTS5), in id order."""
        match = fts_query(query)
        if not match:
            return []
        rows = await fetch_all(
            self._conn,
            "SELECT b.rid FROM bodies_fts f JOIN bodies b ON b.rowid = f.rowid "
            "WHERE bodies_fts MATCH ? AND b.session = ? ORDER BY b.rid LIMIT ?",
            (match, session_id, limit),
        )
        return [r[0] for r in rows]

    async def search_hits(
        self, query: str, *, session: str | None = None, limit: int = 1000
    ) -> tuple[list[Hit], bool]:
        """Messages, calls, thinking, summaries and results matching `query`, in one session
        or all (src/ctxview/store/search.py), and whether there were more than `limit`."""
        return await search_events(self._conn, query, session=session, limit=limit)

    async def children(self, session_id: str) -> list[tuple[str, str, str | None, int]]:
        """The sub-agent sessions a session started: (id, title, parent call, results)."""
        rows = await fetch_all(
            self._conn,
            "SELECT s.id, s.title, s.parent_call, (SELECT count(rid) FROM events e "
            "WHERE e.session = s.id) FROM sessions s WHERE s.parent_session = ?",
            (session_id,),
        )
        return [(r[0], r[1], r[2], int(r[3])) for r in rows]
