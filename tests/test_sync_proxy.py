"""Proxied sessions travel: push to a real PostgreSQL 15 (tests/pg_helpers.py) and pull into a
fresh store, then `ctxview requests --json` on the replica gives what it gives on the original
(bodies exactly as forwarded, answers, costs, outcomes); a second push sends only the new
records, a record changed since is pulled over the old one, and the request records of a
transcript imported into the same session travel with it."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

sys.path.insert(0, str(Path(__file__).parent))
import pg_helpers
from pg_helpers import ctx

from ctxview.proxy.rewrite import Rewriter
from ctxview.proxy.server import Proxy
from ctxview.rules.config import Config

cluster, url = pg_helpers.cluster, pg_helpers.url

FIXTURE = Path(__file__).parent / "fixtures" / "viewer" / "claude_2_1_328_requests.jsonl"
CC = "a9519e3f-a931-41dd-beb1-0876d6d8fb11"  # the fixture's Claude Code session
SMALL = Config({"elide.threshold_chars": 20_000, "elide.min_chars": 300})


class Upstream:
    """A scripted model API: Messages and Chat Completions answered as JSON with usage; a
    `fail` path answers 500."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.bodies.append(raw)
        if request.path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": 42})
        if "fail" in request.query:
            return web.json_response({"type": "error", "error": {"message": "no"}}, status=500)
        n = len(raw) // 4
        if request.path.endswith("/chat/completions"):
            return web.json_response({"id": "c1", "object": "chat.completion", "model": "gpt-4o",
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant",
                                                               "content": "hi"}}],
                                      "usage": {"prompt_tokens": n, "completion_tokens": 2}})  # fmt: skip
        return web.json_response({"id": f"msg_{len(self.bodies)}", "type": "message",
                                  "role": "assistant", "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": "ok"}],
                                  "stop_reason": "end_turn",
                                  "usage": {"input_tokens": 10, "output_tokens": 5,
                                            "cache_read_input_tokens": n // 2,
                                            "cache_creation_input_tokens": n - n // 2}})  # fmt: skip


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    app = web.Application(client_max_size=64 << 20)
    app.router.add_route("*", "/{tail:.*}", Upstream().handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    await runner.cleanup()


def _conversation(turns: int, size: int = 3000) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "fix the tests"}]
    for t in range(turns):
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{t}", "name": "Read", "input": {"n": t}}
                ],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{t}",
                        "content": f"{t} " + "x" * size,
                    }
                ],
            }
        )
    return msgs  # fmt: skip


def _messages(sid: str, turns: int) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100,
            "metadata": {"user_id": json.dumps({"session_id": sid})},
            "system": "You help.", "tools": [{"name": "Read", "input_schema": {}}],
            "messages": _conversation(turns)}  # fmt: skip


async def _through_proxy(store: Path, upstream: str, turns: range, *, extra: bool) -> None:
    """Requests through the real proxy (`--elide` with a small threshold, so some are elided
    and their texts stored): a growing Messages session in the imported transcript's session;
    with `extra`, a token count, an unparsed body, an upstream 500 and a Chat Completions one."""
    p = Proxy(store, upstream=upstream, rewriter=Rewriter(elide=True, config=SMALL))
    await p.start()
    base = f"http://127.0.0.1:{p.port}/{p.secret}"
    key = {"x-api-key": "sk-ant-SECRET", "content-type": "application/json"}
    try:
        async with aiohttp.ClientSession() as s:
            for t in turns:
                async with s.post(f"{base}/v1/messages", data=json.dumps(_messages(CC, t)),
                                  headers=key) as resp:  # fmt: skip
                    assert resp.status == 200, await resp.text()
            if extra:
                for path, body in (("/v1/messages/count_tokens", json.dumps(_messages(CC, 1))),
                                   ("/v1/messages", "{not json"),
                                   ("/v1/messages?fail=1", json.dumps(_messages("other", 1))),
                                   ("/v1/chat/completions", json.dumps({
                                       "model": "gpt-4o", "messages": [
                                           {"role": "user", "content": "hello"}]}))):  # fmt: skip
                    async with s.post(base + path, data=body, headers=key) as resp:
                        await resp.read()
        await p.recorder.drain()
    finally:
        await p.stop()


def _requests(store: Path, sid: str) -> list[dict[str, Any]]:
    out = ctx("--store", str(store), "requests", sid, "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def _table(store: Path, sql: str) -> list[Any]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


_RECORDS = ("SELECT session, seq, request_id, api_n, protocol, method, path, upstream, started, "
            "first_byte_ms, total_ms, status, outcome, note, request_headers, response_headers, "
            "body_bytes, body_sha256, parsed, layout, body_raw, answer, answer_raw, usage "
            "FROM proxy_records ORDER BY session, seq")  # fmt: skip
_API = ("SELECT session, n, id, ts, query_source, shape_hash, base, keep, tail, params, "
        "cache_control, digest, usage FROM api_requests ORDER BY session, n")  # fmt: skip


def _same_records(a: Path, c: Path) -> None:
    """The replica holds the original's request records row for row (`rev` is each store's)."""
    assert _table(c, _RECORDS) == _table(a, _RECORDS)
    assert _table(c, _API) == _table(a, _API)
    assert _table(c, "SELECT session, cost FROM api_costs") == _table(
        a, "SELECT session, cost FROM api_costs")  # fmt: skip
    for t in ("api_blobs", "api_shapes"):
        assert set(_table(c, f"SELECT * FROM {t}")) == set(_table(a, f"SELECT * FROM {t}"))


def _sessions(store: Path) -> list[dict[str, Any]]:
    out = ctx("--store", str(store), "sessions", "--json")
    assert out.returncode == 0, out.stderr
    return sorted(json.loads(out.stdout), key=lambda s: s["id"])


def _team_revs(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {t: int(conn.execute(f"SELECT coalesce(max(rev), 0) FROM ctxview_{t}").fetchone()[0])  # type: ignore[index]
                for t in ("api_requests", "proxy_records", "api_costs")}  # fmt: skip


def _team_past(url: str, revs: dict[str, int]) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {t: int(conn.execute(f"SELECT count(*) FROM ctxview_{t} WHERE rev > %s",
                                    (r,)).fetchone()[0])  # type: ignore[index]
                for t, r in revs.items()}  # fmt: skip


@pg_helpers.needs_postgres
async def test_a_proxied_session_pushed_and_pulled_gives_the_same_requests(
    tmp_path: Path, url: str, upstream: str
) -> None:
    a, c = tmp_path / "a.db", tmp_path / "c.db"
    # Claude Code's own request records first (the import), then the proxy's, one session.
    imported = ctx("--store", str(a), "import", str(FIXTURE))
    assert imported.returncode == 0, imported.stderr
    await _through_proxy(a, upstream, range(1, 26), extra=True)
    sids = [r[0] for r in _table(a, "SELECT DISTINCT session FROM proxy_records ORDER BY 1")]
    # The transcript's, "other", the unparsed body's (no header names its session), a px- one.
    assert f"cc-{CC}" in sids and "cc-other" in sids and "px-unparsed" in sids and len(sids) == 4
    before = {sid: _requests(a, sid) for sid in sids}
    mine = before[f"cc-{CC}"]
    # Every request of the hooked+proxied session once: the proxy's records, not also the
    # import's own record of the same session's requests.
    assert [r["seq"] for r in mine] == sorted({r["seq"] for r in mine})
    assert len(mine) == 25 + 1  # the Messages ones and a token count
    assert any(" elided: " in json.dumps(r["body"]) for r in mine if r["body"])
    assert {r["outcome"] for r in before["cc-other"]} == {"complete"}
    assert {r["status"] for r in before["cc-other"]} == {500}
    assert [r["parsed"] for r in before["px-unparsed"]] == [False]
    assert _table(a, "SELECT count(*) FROM api_requests WHERE n < 4294967296")[0][0] > 0

    pushed = ctx("--store", str(a), "push", "--to", url)
    assert pushed.returncode == 0, pushed.stderr
    pulled = ctx("--store", str(c), "pull", "--from", url)
    assert pulled.returncode == 0, pulled.stderr
    for sid in sids:
        assert _requests(c, sid) == before[sid], sid
    _same_records(a, c)
    # The elided texts came too: recall on the replica gives them back.
    rid = next(m.group(1) for r in mine if (m := re.search(r"\[#([0-9a-f]+) elided: ",
                                                           json.dumps(r["body"]))))  # fmt: skip
    recalled = ctx("--store", str(c), "recall", f"#{rid}", "--session", f"cc-{CC}")
    assert recalled.returncode == 0 and recalled.stdout == ctx(
        "--store", str(a), "recall", f"#{rid}", "--session", f"cc-{CC}").stdout  # fmt: skip
    # The session list counts alike (a pulled one names its machine).
    src, got = _sessions(a), _sessions(c)
    assert [s["id"] for s in got] == [s["id"] for s in src]
    for s, g in zip(src, got, strict=True):
        assert g["data"].pop("machine") == "dev-a"
        assert g == s
    assert ctx("--store", str(c), "doctor").returncode in (0, 1)
    # `stats` prices and replays the pulled requests as it does the original's.
    for sid in sids:
        here, there = (ctx("--store", str(s), "stats", "--session", sid, "--json") for s in (a, c))
        assert here.returncode == 0 and there.returncode == 0, there.stderr
        assert json.loads(there.stdout) == json.loads(here.stdout)
        assert sid != f"cc-{CC}" or '"proxied"' in here.stdout
    # Nothing new: nothing sent, nothing pulled.
    assert "Pushed 0 rows" in ctx("--store", str(a), "push", "--to", url).stdout
    assert ctx("--store", str(c), "pull", "--from", url).stdout.startswith("Pulled 0 rows")

    # Incremental: one more request, and only its rows go (an upsert of the others would have
    # given them a new team rev).
    revs = _team_revs(url)
    await _through_proxy(a, upstream, range(26, 27), extra=False)
    again = ctx("--store", str(a), "push", "--to", url)
    assert again.returncode == 0, again.stderr
    assert _team_past(url, revs) == {"api_requests": 1, "proxy_records": 1, "api_costs": 0}
    assert ctx("--store", str(c), "pull", "--from", url).returncode == 0
    assert _requests(c, f"cc-{CC}") == _requests(a, f"cc-{CC}")
    assert len(_requests(c, f"cc-{CC}")) == len(mine) + 1

    # A record changed after it was pushed (an answer's usage that came later): the team's
    # newer version replaces the replica's, as a pulled event does.
    from ctxview.store import Writer
    from ctxview.store.requests import RequestRecords

    rid0 = _table(a, f"SELECT id FROM api_requests WHERE session = 'cc-{CC}' ORDER BY n")[0][0]
    async with await Writer.open(a) as w, w.transaction():
        await w.write_requests(f"cc-{CC}", RequestRecords(
            usage=[(rid0, json.dumps({"input_tokens": 1234, "output_tokens": 5}))]))  # fmt: skip
    revs = _team_revs(url)
    assert ctx("--store", str(a), "push", "--to", url).returncode == 0
    assert _team_past(url, revs) == {"api_requests": 1, "proxy_records": 0, "api_costs": 0}
    assert ctx("--store", str(c), "pull", "--from", url).returncode == 0
    _same_records(a, c)
    assert (
        '"input_tokens": 1234'
        in _table(c, f"SELECT usage FROM api_requests WHERE id = '{rid0}'")[0][0]
    )


async def test_rename_carries_the_proxy_records(tmp_path: Path, upstream: str) -> None:
    from ctxview.store import Writer

    a = tmp_path / "a.db"
    await _through_proxy(a, upstream, range(1, 4), extra=False)
    sid = f"cc-{CC}"
    before = _requests(a, sid)
    async with await Writer.open(a) as w, w.transaction():
        await w.rename_session(sid, "cc-renamed")
    after = _requests(a, "cc-renamed")
    assert [{**r, "session": sid} for r in after] == before
    assert _table(a, f"SELECT count(*) FROM proxy_records WHERE session = '{sid}'") == [(0,)]


@pg_helpers.needs_postgres
async def test_a_team_database_of_schema_1_is_migrated_and_takes_proxied_sessions(
    tmp_path: Path, url: str, upstream: str
) -> None:
    """A database an older ctxview made (schema 1, no request-record tables, a session in it)
    is brought to schema 2 by the first push that needs it; what was there stays and pulls."""
    import psycopg

    from ctxview.sync.remote import SCHEMA_V1

    with psycopg.connect(url) as conn:
        conn.execute(SCHEMA_V1)  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO ctxview_sessions (machine, id, title, workspace, source, started, "
            "config, next_rid, data, pushed_seq, version) VALUES ('dev-z', 'old-one', 'old', "
            "'/w', 'live', 1700000000, '{}', 1, '{}', 1, 1)"
        )
        conn.execute("INSERT INTO ctxview_events (machine, session, seq, ts, kind, role, text) "
                     "VALUES ('dev-z', 'old-one', 1, 1700000000.5, 'message', 'user', 'hi')")  # fmt: skip
    a = tmp_path / "a.db"
    await _through_proxy(a, upstream, range(1, 4), extra=False)
    assert ctx("--store", str(a), "push", "--to", url).returncode == 0
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT value FROM ctxview_meta WHERE key = 'schema_version'"
                            ).fetchone() == ("2",)  # fmt: skip
    c = tmp_path / "c.db"
    pulled = ctx("--store", str(c), "pull", "--from", url)
    assert pulled.returncode == 0, pulled.stderr
    assert _requests(c, f"cc-{CC}") == _requests(a, f"cc-{CC}")
    assert [e[:2] for e in pg_helpers.rows(c)["events"]] == [("old-one", 1)]  # type: ignore[index]


def _count(url_or_path: str | Path, table: str) -> int:
    """Rows of a request-record table, in PostgreSQL (a URL) or a store (0 while not made)."""
    if isinstance(url_or_path, Path):
        try:
            return int(_table(url_or_path, f"SELECT count(*) FROM {table}")[0][0])
        except sqlite3.OperationalError:
            return 0
    import psycopg

    with psycopg.connect(url_or_path) as conn:
        try:
            return int(conn.execute(f"SELECT count(*) FROM ctxview_{table}").fetchone()[0])  # type: ignore[index]
        except psycopg.errors.UndefinedTable:
            return 0


def _killed_at(cmd: list[str], progress: Any, target: int, env: dict[str, str]) -> bool:
    """Run ctxview `cmd`, SIGKILL it once `progress()` reaches `target`; whether it was cut."""
    import os
    import signal
    import subprocess
    import time

    p = subprocess.Popen([sys.executable, "-m", "ctxview.cli", *cmd], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env={**os.environ, **env})  # fmt: skip
    deadline = time.monotonic() + 60
    try:
        while p.poll() is None and time.monotonic() < deadline:
            if progress() >= target:
                p.send_signal(signal.SIGKILL)
                return True
            time.sleep(0.005)
        return False
    finally:
        p.wait(10)


@pg_helpers.needs_postgres
async def test_kill_9_push_and_pull_of_proxied_records(
    tmp_path: Path, url: str, upstream: str
) -> None:
    """Push and pull killed -9 in the middle of a session's request records (slices of two
    rows), the session growing between the rounds, then run to the end: the replica holds the
    original's records row for row, none twice."""
    import random

    rng = random.Random(20261202)
    a, c = tmp_path / "a.db", tmp_path / "c.db"
    env = {"CTXVIEW_MACHINE": "dev-a", "CTXVIEW_SYNC_ROWS": "2"}  # many slices: runs outlast a kill
    killed = 0
    for r in range(6):
        await _through_proxy(a, upstream, range(1 + 10 * r, 11 + 10 * r), extra=False)
        before = _count(url, "proxy_records")
        killed += _killed_at(["--store", str(a), "push", "--to", url],
                             lambda: _count(url, "proxy_records"), before + rng.randint(1, 6),
                             env)  # fmt: skip
    assert killed >= 4
    assert ctx("--store", str(a), "push", "--to", url, **env).returncode == 0
    assert _count(url, "proxy_records") == _count(a, "proxy_records") == 60
    env["CTXVIEW_SYNC_ROWS"] = "4"  # pull: a record a slice
    killed = 0
    for _ in range(6):
        before = _count(c, "proxy_records")
        killed += _killed_at(["--store", str(c), "pull", "--from", url],
                             lambda: _count(c, "proxy_records"), before + rng.randint(1, 6),
                             env)  # fmt: skip
    assert killed >= 4
    assert ctx("--store", str(c), "pull", "--from", url, **env).returncode == 0
    _same_records(a, c)
    assert _requests(c, f"cc-{CC}") == _requests(a, f"cc-{CC}")


@pg_helpers.needs_postgres
async def test_the_same_proxied_session_from_two_machines(
    tmp_path: Path, url: str, upstream: str
) -> None:
    """One `cc-` id on two machines: the replica has `ID` and `ID@machine`, each with its own
    machine's records (pulled in slices of one row)."""
    import shutil

    a = tmp_path / "a.db"
    await _through_proxy(a, upstream, range(1, 4), extra=False)
    b = tmp_path / "b.db"
    shutil.copy(a, b)
    await _through_proxy(b, upstream, range(4, 6), extra=False)
    env = {"CTXVIEW_SYNC_ROWS": "4"}  # pull: one record a slice
    assert ctx("--store", str(a), "push", "--to", url, machine="dev-a", **env).returncode == 0
    assert ctx("--store", str(b), "push", "--to", url, machine="dev-b", **env).returncode == 0
    c = tmp_path / "c.db"
    # Slices of one row: the bodies' share of a slice (a quarter) must not round down to none.
    pulled = ctx("--store", str(c), "pull", "--from", url, timeout=30, CTXVIEW_SYNC_ROWS="1")
    assert pulled.returncode == 0, pulled.stderr
    sid = f"cc-{CC}"
    mine, theirs = _requests(a, sid), _requests(b, sid)
    assert len(mine) == 3 and len(theirs) == 5
    assert _requests(c, sid) == mine
    assert _requests(c, f"{sid}@dev-b") == [{**r, "session": f"{sid}@dev-b"} for r in theirs]


@pg_helpers.needs_postgres
async def test_watch_carries_proxied_requests_as_they_are_recorded(
    tmp_path: Path, url: str, upstream: str
) -> None:
    """`push --watch` on the proxy's store and `pull --watch` into a replica: requests recorded
    while both run reach the replica, the session made by the first of them included."""
    from pg_helpers import spawn, until

    a, c = tmp_path / "a.db", tmp_path / "c.db"
    await _through_proxy(a, upstream, range(1, 2), extra=False)
    procs = [spawn("--store", str(a), "push", "--to", url, "--watch"),
             spawn("--store", str(c), "pull", "--from", url, "--watch")]  # fmt: skip
    try:
        until(lambda: _count(c, "proxy_records") == 1)
        await _through_proxy(a, upstream, range(2, 5), extra=True)
        until(lambda: _count(c, "proxy_records") == _count(a, "proxy_records") == 8)
        until(lambda: _table(c, _RECORDS) == _table(a, _RECORDS))
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
    for sid in (f"cc-{CC}", "cc-other", "px-unparsed"):
        assert _requests(c, sid) == _requests(a, sid)
