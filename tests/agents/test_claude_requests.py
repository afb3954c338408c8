"""Claude Code's own api-request records, rebuilt by ctxview, equal what the model server got.

The pinned Claude Code runs headless against the scripted Messages API for several turns (a
Read, a Bash whose output is too long to send whole, an Edit), a resumed second prompt, a
`/compact` and one more prompt after it; the server keeps every body it receives.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import Project, needs_claude
from fake_anthropic import FakeAnthropic, is_summary_request

from ctxview.context import requests as api
from ctxview.importers import api_requests
from ctxview.store import requests as stored


def _marks(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Paths of every cache_control in a body as sent; system counted without the billing
    header, as Claude Code's cacheControl counts it."""
    out: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                out.append(path)
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    system = body["system"][1:]
    walk({"system": system, "messages": body["messages"], "tools": body["tools"]}, ())
    return sorted(out, key=json.dumps)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("requests")
    p = Project(tmp / "proj", tmp / "home", tmp / "state" / "store.db")
    p.root.mkdir()
    p.home.mkdir()
    (p.root / "hello.txt").write_text("line one\nline two\nline three\n")
    # Long enough that Claude Code keeps it in a file and sends a preview.
    (p.root / "big.txt").write_text("".join(f"row {i} {'x' * 60}\n" for i in range(3000)))
    steps = [
        {"tool": "Read", "input": {"file_path": str(p.root / "hello.txt")}},
        {"tool": "Bash", "input": {"command": "cat big.txt", "description": "show"}},
        {"tool": "Edit", "input": {"file_path": str(p.root / "hello.txt"),
                                   "old_string": "line two", "new_string": "line 2"}},
        {"text": "All done."},
        {"tool": "Bash", "input": {"command": "echo second", "description": "echo"}},
        {"text": "Second done."},
    ]  # fmt: skip
    with FakeAnthropic(steps) as server:
        sid = p.claude(server.url, "read hello, cat big, edit")["session_id"]
        p.claude(server.url, "now echo", "--resume", sid)
        p.claude(server.url, "/compact", "--resume", sid)
        p.claude(server.url, "after compact", "--resume", sid)
        sent = list(server.requests)
    [path] = list((p.home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
    return {"project": p, "sid": sid, "sent": sent, "path": path}


def _from_transcript(path: Path) -> list[api.RecordedRequest]:
    """The requests rebuilt straight from the transcript (the collector's rows, no store)."""
    collector = api_requests.Collector()
    shapes: dict[str, Any] = {}
    blobs: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        got = collector.feed(json.loads(line))
        shapes.update((h, json.loads(s)) for h, s in got.shapes)
        blobs.update((h, json.loads(s)) for h, s in got.blobs)
        rows.extend({"id": r["id"], "base": r.get("base"), "keep": r["keep"], "tail": r["tail"],
                     "shape_hash": r["shapeHash"], "cache_control": r["cacheControl"],
                     "params": r["params"], "digest": r["requestDigest"]}
                    for r in got.requests)  # fmt: skip
    assert not collector.wanted, "a tail hash matched no blob and no transcript message"
    return api.rebuild(rows, shapes, blobs)


def check_requests(sent: list[dict[str, Any]], rebuilt: list[api.RecordedRequest]) -> None:
    """Every logged request equals the rebuilt one at its place, in order; the only ones without
    a record are compaction summary requests (2.1.328 records none for them)."""
    assert rebuilt, "the transcript carries no api-request records"
    todo = list(rebuilt)
    for i, body in enumerate(sent):
        if not todo or (is_summary_request(body) and todo[0].body["messages"] != body["messages"]):
            assert is_summary_request(body), f"request {i} has no record and is no summary"
            continue
        req = todo.pop(0)
        assert req.exact, (req.missing, req.missed_marks)
        assert body["system"][0]["text"].startswith(api.BILLING_PREFIX)
        got = req.body
        # Without the cache marks: the content itself, message for message.
        assert api.strip_cache(body["system"][1:]) == api.strip_cache(got["system"])
        assert api.strip_cache(body["tools"]) == api.strip_cache(got["tools"])
        want_msgs = api.strip_cache(body["messages"])
        assert len(want_msgs) == len(got["messages"]), i
        for j, (a, b) in enumerate(zip(want_msgs, api.strip_cache(got["messages"]), strict=True)):
            assert a == b, (i, j)
        # The cache marks, compared apart with the record's cacheControl.
        assert _marks(body) == sorted((tuple(m["path"]) for m in req.marks), key=json.dumps)
        assert (body["system"][1:], body["tools"], body["messages"]) == (
            got["system"],
            got["tools"],
            got["messages"],
        )
        for key in ("model", "max_tokens", "thinking", "context_management", "output_config"):
            assert body.get(key) == req.params.get(key), key
        # Not reproduced (2.1.328): a request that ends in the "hasn't heard from you" reminder
        # (a long silent run); every other request's digest is.
        silent = "hasn't heard from you" in json.dumps(body["messages"][-1])
        assert req.digest_ok or silent, f"request {i}: requestDigest not reproduced"
    assert not todo, f"{len(todo)} recorded requests were never sent"


@needs_claude
def test_rebuilt_from_the_transcript_equal_what_was_sent(session: dict[str, Any]) -> None:
    rebuilt = _from_transcript(session["path"])
    check_requests(session["sent"], rebuilt)
    # A resume starts a new process (keep 0) and the compaction's summary replaces the history:
    # both break the prefix of the request before.
    breaks = [r.n for r in rebuilt if r.prefix_break]
    assert len(breaks) == 2, breaks
    assert len(session["sent"]) == len(rebuilt) + 1  # the summary request


@needs_claude
def test_hash_is_the_canonical_message(session: dict[str, Any]) -> None:
    """Blob hashes are SHA-256 of the canonical message; tail hashes without a blob are
    transcript messages under the same hash."""
    recs = [json.loads(line) for line in session["path"].read_text().splitlines()]
    blobs = [r for r in recs if r.get("type") == "api-request-blob"]
    assert blobs and all(api.message_hash(b["message"]) == b["hash"] for b in blobs)
    named = {h for r in recs if r.get("type") == "api-request" for h in r["tail"]}
    transcript = {api.message_hash({"role": r["message"]["role"],
                                    "content": r["message"]["content"]})
                  for r in recs if r.get("type") in ("user", "assistant")}  # fmt: skip
    no_blob = named - {b["hash"] for b in blobs}
    assert no_blob and no_blob <= transcript
    shapes = [r for r in recs if r.get("type") == "api-request-shape"]
    assert all(api.digest(s["shape"]) == s["shapeHash"] for s in shapes)


@needs_claude
def test_timing(session: dict[str, Any]) -> None:
    started = time.monotonic()
    _from_transcript(session["path"])
    assert time.monotonic() - started < 5


@needs_claude
def test_imported_requests_equal_what_was_sent(session: dict[str, Any]) -> None:
    """`ctxview import` stores the requests (each distinct shape and message once) and they are
    rebuilt from the store alone; the request kinds are no longer 'unknown'."""
    p: Project = session["project"]
    done = p.ctxview("import", str(session["path"]))
    assert done.returncode == 0, done.stderr
    assert "unknown record type" not in done.stderr, done.stderr
    # Known kinds with nothing to import: one count in the summary, not a line each.
    assert "Left aside" in done.stdout and "attachment" in done.stdout, done.stdout
    assert "Skipped" not in done.stderr, done.stderr
    conn = sqlite3.connect(p.store)
    try:
        [sid] = [r[0] for r in conn.execute("SELECT id FROM sessions WHERE source_ref = ?",
                                            (session["sid"],))]  # fmt: skip
        rebuilt = api.rebuild_stored(stored.read(conn, sid))
        check_requests(session["sent"], rebuilt)
        assert all(r.usage and r.usage["output_tokens"] == 20 for r in rebuilt)
        cost = stored.read_cost(conn, sid)
        assert cost is not None and cost["totalCostUSD"] > 0 and cost["modelUsage"]
        # Shared storage: each message and shape once, however many requests send it.
        n_blobs = conn.execute("SELECT count(*) FROM api_blobs").fetchone()[0]
        sent_msgs = {api.message_hash(m) for b in session["sent"] for m in b["messages"]}
        assert n_blobs <= len(sent_msgs)
        assert conn.execute("SELECT count(*) FROM api_shapes").fetchone()[0] == 1
        # stats: the recorded requests are the "no measure" arm; the transcript's own cost.
        done = p.ctxview("stats", "--json")
        assert done.returncode == 0, done.stderr
        [st] = json.loads(done.stdout)["sessions"]
        assert st["recorded_requests"] == len(rebuilt)
        assert st["arms"]["none"]["requests"] == len(rebuilt)
        assert st["arms"]["none"]["prefix_breaks"] == sum(r.prefix_break for r in rebuilt)
        assert st["cost_usd"] == cost["totalCostUSD"]
        text = p.ctxview("stats").stdout
        assert "Claude Code's own record" in text and "cost-state" in text, text
        # Importing again adds nothing.
        assert p.ctxview("import", str(session["path"])).returncode == 0
        assert conn.execute("SELECT count(*) FROM api_blobs").fetchone()[0] == n_blobs
    finally:
        conn.close()


@needs_claude
async def test_x_shows_the_recorded_request(session: dict[str, Any]) -> None:
    """`x` on a session with records shows the request as sent and says so; the last one is
    the request after the compaction, its prefix broken."""
    from ctxview.viewer.app import CtxviewApp
    from ctxview.viewer.screens.context import ContextScreen
    from ctxview.viewer.widgets.context_panel import ContextPanel

    p: Project = session["project"]
    if not p.store.exists():
        assert p.ctxview("import", str(session["path"])).returncode == 0
    conn = sqlite3.connect(p.store)
    [sid] = [r[0] for r in conn.execute("SELECT id FROM sessions WHERE source_ref = ?",
                                        (session["sid"],))]  # fmt: skip
    conn.close()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viewer"))
    from viewer_helpers import open_request, ready, wait_for

    async with CtxviewApp(p.store, session=sid, watch=False).run_test(size=(140, 50)) as pilot:
        await ready(pilot)
        screen = await open_request(pilot)
        title = str(screen.query_one("#context-title").render())
        assert "exactly as sent (Claude Code's own record)" in title, title
        assert "prefix broken here" in title and "3 cache breakpoints" in title, title
        last = [b for b in session["sent"] if not is_summary_request(b)][-1]
        assert last["messages"][-1]["content"][-1]["text"][:60] in screen.text
        assert "⟪cache breakpoint⟫" in screen.text
        # The context panel: the recorded requests' real sizes and their prefix breaks.
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(pilot.app.screen, ContextScreen))
        await pilot.press("c")
        await wait_for(pilot, lambda: bool(pilot.app.screen.query(ContextPanel)))
        panel = pilot.app.screen.query_one(ContextPanel)
        await wait_for(pilot, lambda: panel.figures.done and bool(panel.figures.recorded))
        await pilot.pause()
        lines = panel.render().plain.split("\n")
        row = next(i for i, ln in enumerate(lines) if ln.startswith("recorded"))
        assert lines[row + 1].count("K") >= 1, lines[row : row + 2]
        assert "3 cache breakpoints" in lines[row + 1], lines[row + 1]


@needs_claude
async def test_imported_as_it_grows_equal_what_was_sent(session: dict[str, Any],
                                                        tmp_path: Path) -> None:  # fmt: skip
    """The transcript imported in pieces, each by a new importer (as `follow` restarted or
    `import` run again would): a request's tail names messages an earlier piece read."""
    from ctxview.importers.runner import import_file
    from ctxview.store import Writer

    lines = session["path"].read_text().splitlines(keepends=True)
    grown = tmp_path / session["path"].name
    store = tmp_path / "grown.db"
    writer = await Writer.open(store)
    try:
        for end in range(7, len(lines) + 7, 7):
            grown.write_text("".join(lines[:end]))
            await import_file(writer, grown)
    finally:
        await writer.close()
    conn = sqlite3.connect(store)
    try:
        [sid] = [r[0] for r in conn.execute("SELECT DISTINCT session FROM api_requests")]
        check_requests(session["sent"], api.rebuild_stored(stored.read(conn, sid)))
    finally:
        conn.close()


# Without Claude Code: the collector's own rules on hand-made records.


def _msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def test_hash_form_and_wire_form() -> None:
    as_string = {"role": "user", "content": "héllo"}
    as_blocks = {"role": "user", "content": [{"type": "text", "text": "héllo",
                                              "cache_control": {"type": "ephemeral"}}]}  # fmt: skip
    assert api.message_hash(as_string) == api.message_hash(as_blocks)
    assert api.message_hash(as_string) == api.digest(_msg("user", "héllo"))
    assert api.wire(_msg("user", "hi")) == {"role": "user", "content": "hi"}
    assert api.wire(_msg("assistant", "hi")) == _msg("assistant", "hi")  # keeps its blocks
    body, missed = api.build({"system": [{"type": "text", "text": "s"}], "tools": []},
                             [_msg("user", "hi")],
                             [{"path": ["messages", 0, "content", 0],
                               "value": {"type": "ephemeral"}},
                              {"path": ["messages", 5, "content", 0], "value": {}}])  # fmt: skip
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        }
    ]
    assert missed == ['["messages", 5, "content", 0]']


def test_tail_named_before_its_message_and_prefix_breaks() -> None:
    c = api_requests.Collector()
    a, b, d = _msg("user", "a"), _msg("assistant", "b"), _msg("user", "d")
    ha, hd = api.message_hash(a), api.message_hash(d)
    shape = {"type": "api-request-shape", "shapeHash": "s", "shape": {"system": [], "tools": []}}
    rows: list[api_requests.Rows] = [c.feed(shape)]
    rows.append(c.feed({"type": "user", "message": a}))
    rows.append(c.feed({"type": "api-request", "id": "r1", "keep": 0, "tail": [ha],
                        "shapeHash": "s", "params": {}, "cacheControl": []}))  # fmt: skip
    # The assistant's answer in two records of one message id: one API message.
    for block in b["content"] * 2:
        rows.append(c.feed({"type": "assistant", "message": {
            "id": "m1", "role": "assistant", "content": [block]}}))  # fmt: skip
    merged = {"role": "assistant", "content": b["content"] * 2}
    # The next request names the merged answer and a message not written yet.
    rows.append(c.feed({"type": "api-request", "id": "r2", "base": "r1", "keep": 1,
                        "tail": [api.message_hash(merged), hd], "shapeHash": "s",
                        "params": {}, "cacheControl": []}))  # fmt: skip
    assert c.wanted == {hd}
    rows.append(c.feed({"type": "user", "message": d}))
    assert not c.wanted
    rows.append(c.feed({"type": "api-request", "id": "r3", "keep": 0, "tail": [hd],
                        "shapeHash": "s", "params": {}, "cacheControl": []}))  # fmt: skip
    blobs = {h: json.loads(m) for r in rows for h, m in r.blobs}
    assert set(blobs) == {ha, api.message_hash(merged), hd}  # each once
    reqs = api.rebuild([{"id": q["id"], "base": q.get("base"), "keep": q["keep"],
                         "tail": q["tail"], "shape_hash": "s", "cache_control": [],
                         "params": {}} for r in rows for q in r.requests],
                       {"s": {"system": [], "tools": []}}, blobs)  # fmt: skip
    assert [len(r.body["messages"]) for r in reqs] == [1, 3, 1]
    assert [r.prefix_break for r in reqs] == [False, False, True]
    assert all(r.exact for r in reqs)
