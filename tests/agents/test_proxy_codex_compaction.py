"""The real Codex 0.169.0 compacting through `ctxview run --elide -- codex exec …`: pushed past
the threshold by large command outputs, then told its context is full (the scripted answer's
usage), it compacts (its remote compaction: the history and a `compaction_trigger` item, then
the history replaced by its first messages, the prompt and the `compaction` item the API
answered with) and carries on. Across it: the compaction request elided as the request before
it (it reads that one's cache), the rebuilt conversation a new one for the threshold (sent
whole while its own items are under it, though it keeps the same first entry), no stub naming
text the request does not carry, each stub the text Codex itself recorded for that call,
prefixes byte-identical except at a stride or at the compaction, and the store holding every
request as sent, the compaction one too, in Codex's session."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from fake_openai import Call, Say, Scripted
from test_proxy_codex import CODEX, CONFIG, CTXVIEW, pytestmark  # noqa: F401

from ctxview.context import request_elide as re_
from ctxview.context.request_cost import stub_ids, unelided
from ctxview.context.request_diff import diffs
from ctxview.rules import elide as rules

BEFORE = 28  # calls before the compaction: the threshold passed near call 22, two strides
AFTER = 12  # calls after it: 29 items, past a stride's worth, far under the threshold
THRESHOLD = 180_000
LIMIT = 150_000  # Codex's auto-compaction limit, in tokens: only the scripted usage reaches it


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _codex_outputs(codex_home: Path) -> dict[str, Any]:
    """call_id -> the output Codex recorded for it in its own rollout."""
    out: dict[str, Any] = {}
    for path in (codex_home / "sessions").rglob("rollout-*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            p = row.get("payload") or {}
            if row.get("type") == "response_item" and p.get("type") == "function_call_output":
                out[p["call_id"]] = p["output"]
    return out


def test_codex_compaction_through_elide(tmp_path: Path) -> None:
    home, codex_home, work = tmp_path / "home", tmp_path / "codex", tmp_path / "work"
    for d in (home, codex_home, work):
        d.mkdir()
    (codex_home / "config.toml").write_text(
        CONFIG.replace('model = "gpt-test"\n', f'model = "gpt-test"\n'
                       f"model_auto_compact_token_limit = {LIMIT}\n"))  # fmt: skip
    for i in range(BEFORE + AFTER):
        (work / f"big{i}.txt").write_text("\n".join(f"{i:02d} line {j:03d} " + "z" * 58
                                                    for j in range(100)) + "\n")  # fmt: skip
    store = tmp_path / "state" / "store.db"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI", "CODEX", "CTXVIEW"))}  # fmt: skip
    env.update(HOME=str(home), CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-test-secret",
               CTXVIEW_STORE=str(store), XDG_CONFIG_HOME=str(home / ".config"))  # fmt: skip
    steps: list[Call | Say] = [Call("exec_command", {"cmd": f"cat big{i}.txt"})
                               for i in range(BEFORE + AFTER)]  # fmt: skip
    steps[BEFORE - 1].tokens = 2 * LIMIT  # the answer that says the context is full
    steps.append(Say("All read."))
    with Scripted(steps) as api:
        done = subprocess.run(
            [str(CTXVIEW), "run", "--elide", "--upstream", f"http://127.0.0.1:{api.port}", "--",
             str(CODEX), "exec", "--skip-git-repo-check",
             "--dangerously-bypass-approvals-and-sandbox", "read every big file"],
            cwd=work, env=env, capture_output=True, text=True, timeout=600,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        sent = list(api.requests)
        compactions = api.compactions
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    # One compaction, right after the answer that filled the context: its request is the
    # history and the trigger; every later one carries the compaction item instead.
    assert compactions == 1 and len(sent) == BEFORE + AFTER + 2
    ask = BEFORE  # the compaction request's index
    assert sent[ask]["input"][-1] == {"type": "compaction_trigger"}
    after = sent[ask + 1 :]
    assert all(any(m.get("type") == "compaction" for m in r["input"]) for r in after)
    assert len(after[0]["input"]) < len(sent[ask - 1]["input"])
    assert after[0]["input"][0] == sent[0]["input"][0]  # the same first entry, rebuilt after it
    # What Codex sent, every stub's stored text put back.
    session = f"cx-{sent[0]['prompt_cache_key']}"
    out = subprocess.run([str(CTXVIEW), "requests", session, "--json"], env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    responses = [r for r in rows if r["protocol"] == "openai-responses"]
    # The store holds every request as the upstream received it, the compaction one too.
    assert [r["body"] for r in responses] == sent
    assert all(r["outcome"] == "complete" for r in responses)
    conn = sqlite3.connect(store)
    ids = stub_ids(sent)
    texts = {int(r): t for r, t in conn.execute(
        "SELECT rid, CAST(stored AS TEXT) FROM bodies WHERE session = ?", (session,))
        if int(r) in ids}  # fmt: skip
    conn.close()
    assert ids and set(texts) == set(ids)
    client = unelided(sent, texts)
    recorded = _codex_outputs(codex_home)
    for mine, got in zip(client, sent, strict=True):
        calls = {m["call_id"] for m in mine["input"] if m.get("type") == "function_call"}
        for item in got["input"]:
            for _, text, call in re_.results(item):
                rid = re_.stub_id(text)
                if rid is None:
                    continue
                # A stub names only a text the request carries, and it is Codex's own output.
                assert call in calls and texts[rid] == recorded[call]
                assert rules.content_id(texts[rid]) == rid
    # The threshold on each conversation's own items: the one before the compaction (its
    # request included) crosses near call 22 and stays across; the rebuilt one never does.
    sizes = [re_.messages_size(c["input"]) for c in client]
    assert sizes[: ask + 1] == sorted(sizes[: ask + 1]) and sizes[ask] > THRESHOLD
    assert max(sizes[ask + 1 :]) < THRESHOLD
    crossed = [s > THRESHOLD for s in sizes]
    want = [any(crossed[: i + 1]) if i <= ask else False for i in range(len(sent))]
    assert [bool(stub_ids([g])) for g in sent] == want
    # Where it elides, exactly the strides' outputs: every output item older than the window.
    boundaries = [rules.boundary(len(g["input"]), 8, 16) if w else 0
                  for g, w in zip(sent, want, strict=True)]  # fmt: skip
    for got, b in zip(sent, boundaries, strict=True):
        elided = [i for i, m in enumerate(got["input"]) if re_.message_is_elided(m)]
        assert elided == [i for i, m in enumerate(got["input"][:b])
                          if m.get("type") == "function_call_output"]  # fmt: skip
    assert len({b for b in boundaries if b}) >= 2  # two strides before the compaction
    # Consecutive requests: the input prefix byte-identical, except at a stride (stubs newly
    # in it) or at the compaction (the conversation replaced).
    for k, (a, b) in enumerate(itertools.pairwise(sent), start=1):
        same = _compact(b["input"]).startswith(_compact(a["input"])[:-1])
        newly = {i for i, m in enumerate(b["input"]) if re_.message_is_elided(m)} - {
            i for i, m in enumerate(a["input"]) if re_.message_is_elided(m)}  # fmt: skip
        assert same == (not newly and k != ask + 1), k
    # The compaction request reads what the request before it wrote: its prefix is all of it.
    assert _compact(sent[ask]["input"]).startswith(_compact(sent[ask - 1]["input"])[:-1])
    # The viewer's account of it: each break a stride or the compaction, nothing else.
    reasons = [c.reason for c in diffs(sent, [None] * len(sent))]
    assert reasons[ask + 1] == "compaction"
    assert {r for i, r in enumerate(reasons) if i and i != ask + 1} <= {"kept", "stride"}
    assert reasons.count("stride") == len({b for b in boundaries[: ask + 1] if b})
    # ctxview stats replays it as the proxy sent it, the compaction a break in both replays.
    js = subprocess.run([str(CTXVIEW), "stats", "--json"], env=env, capture_output=True,
                        text=True, timeout=120)  # fmt: skip
    assert js.returncode == 0, js.stderr
    [row] = [s for s in json.loads(js.stdout)["sessions"] if s["id"] == session]
    proxied = row["proxied"]
    assert proxied["elided"] and proxied["missing_texts"] == 0
    assert proxied["replay_with_elision"]["cache_breaks"] == reasons.count("stride") + 1
    assert proxied["replay_without_elision"]["cache_breaks"] == 1
    assert b"sk-test-secret" not in store.read_bytes()
