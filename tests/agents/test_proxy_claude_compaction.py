"""The real Claude Code compacting through `ctxview run --elide`: a scripted session pushed past
the threshold, then `claude -p /compact --resume` and a turn after it, each run through a
proxy of its own (so nothing but the requests themselves carries the elision from one to the
next). The summary request (the whole history and the ask for a summary) is elided with the
very stubs the last request before it sent, so it reads that one's cache across the restart;
after the compaction (a new first message) the conversation is a new one, under the threshold
and sent whole; every request of the three runs is in the store, in the session Claude Code
names, and `ctxview stats` replays the elision byte-equal to what went up."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from claude_helpers import CLAUDE, CTXVIEW, Project, needs_claude
from fake_anthropic import SUMMARY, FakeAnthropic, is_summary_request
from test_proxy_claude_elide import _strip

from ctxview.context import request_elide as re_
from ctxview.context.request_cost import load_prices, session_cost, stub_ids, unelided
from ctxview.context.request_diff import diffs
from ctxview.rules import elide as rules
from ctxview.rules.config import Config
from ctxview.store import Reader

pytestmark = needs_claude

TURNS = 30
AFTER = 4
THRESHOLD = 180_000


def _run(p: Project, url: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(CTXVIEW), "run", "--elide", "--upstream", url, "--", str(CLAUDE), "-p", *args,
         "--output-format", "json", "--allowedTools", "Bash"],
        cwd=p.root, env=p.env("http://127.0.0.1:9/not-used"), capture_output=True, text=True,
        timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return dict(json.loads(done.stdout))


def _bash(i: int) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": f"cat big{i}.txt", "description": "cat"}}


def test_claude_code_compaction_through_elide(tmp_path: Path) -> None:
    p = Project(tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db")
    p.root.mkdir()
    p.home.mkdir()
    for i in range(TURNS + AFTER):
        (p.root / f"big{i}.txt").write_text("\n".join(f"{i:02d} line {j} " + "z" * 60
                                                      for j in range(160)))  # fmt: skip
    with FakeAnthropic([*map(_bash, range(TURNS)), {"text": "All read."}]) as api:
        sid = _run(p, api.url, "read every big file")["session_id"]
        first = list(api.requests)
    with FakeAnthropic([{"text": "Compacted."}], prefix="b") as api:
        _run(p, api.url, "/compact", "--resume", sid)
        second = list(api.requests)
    with FakeAnthropic([*map(_bash, range(TURNS, TURNS + AFTER)), {"text": "Carried on."}],
                       prefix="c") as api:  # fmt: skip
        _run(p, api.url, "carry on", "--resume", sid)
        third = list(api.requests)
    last = [r for r in first if r.get("tools") and not is_summary_request(r)][-1]
    [summary] = [r for r in second if is_summary_request(r)]
    after = [r for r in third if r.get("tools") and not is_summary_request(r)]
    assert len(after) == AFTER + 1
    texts = _texts(p.store, f"cc-{sid}")
    ids = stub_ids([*first, *second, *third])
    assert ids and set(ids) <= set(texts)
    # Before the compaction: past the threshold, elided at the strides.
    b = rules.boundary(len(last["messages"]), 8, 16)
    assert re_.messages_size(unelided([last], texts)[0]["messages"]) > THRESHOLD and b >= 32
    # The summary request: the history as the last request sent it, the same stubs at the same
    # places (each a function of its text; this proxy never saw the first run's requests), then
    # the ask for a summary. So its prefix reads the cache the last request wrote.
    n = len(last["messages"]) - 1
    assert _strip(summary["messages"][:n]) == _strip(last["messages"][:n])
    assert [i for i, m in enumerate(summary["messages"]) if re_.message_is_elided(m)] == [
        i for i, m in enumerate(last["messages"]) if re_.message_is_elided(m)]  # fmt: skip
    # After it: a new conversation (the summary first), its own size under the threshold, sent
    # as Claude Code made it, no stub in it.
    assert SUMMARY in json.dumps(after[0]["messages"][0])
    assert "toolu_0001_Bash" not in json.dumps(after[-1]["messages"])  # compacted away
    for r in after:
        assert re_.messages_size(r["messages"]) < THRESHOLD and not stub_ids([r])
    # The viewer's account: the summary request kept the prefix and added the ask to the last
    # message (a block after its tool result); the next one replaced the conversation.
    ask, replaced = diffs([last, summary, after[0]], [None] * 3)[1:]
    assert (ask.reason, ask.first_diff, ask.block) == (
        "edit",
        n,
        len(last["messages"][n]["content"]),
    )
    assert (replaced.reason, replaced.first_diff) == ("compaction", 0)
    # The store: every request of the three runs as sent, in Claude Code's session.
    out = p.ctxview("requests", f"cc-{sid}", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    got = [r["body"] for r in rows if r["protocol"] == "anthropic-messages"]

    def key(b: Any) -> str:
        return json.dumps(b, sort_keys=True)

    assert sorted(map(key, got)) == sorted(map(key, [*first, *second, *third]))
    # ctxview stats replays the elision over the session's requests as the proxies sent them.
    cost = asyncio.run(_cost(p.store, f"cc-{sid}", tmp_path / "no-prices.json"))
    assert cost.missing_texts == 0 and cost.was_elided
    assert list(map(key, cost.elided_bodies)) == list(map(key, got))


def _texts(store: Path, session: str) -> dict[int, str]:
    conn = sqlite3.connect(store)
    try:
        return {int(r): t for r, t in conn.execute(
            "SELECT rid, CAST(stored AS TEXT) FROM bodies WHERE session = ?", (session,))}  # fmt: skip
    finally:
        conn.close()


async def _cost(store: Path, session: str, prices: Path) -> Any:
    from ctxview.commands import proxied

    async with await Reader.open(store) as r:
        _, s, texts = await proxied.load(r, session)
    return session_cost(s, texts, load_prices(prices), Config())
