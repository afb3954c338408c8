"""A client that keeps its conversation upstream (the OpenAI Responses API's
`previous_response_id`): the `openai` Python SDK, run through `ctxview run --elide`, against
the scripted Responses API, which keeps each response's context as the API does and refuses a
continuation of a response it does not know. Each request carries only its new items. The
proxy forwards every one as it came (`--elide` cannot see the conversation: it leaves them
alone, and says so in the record), records each exactly, and keeps a chain of ids one session,
beside a second conversation of the same client, which is a session of its own."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fake_openai import Call, Say, Scripted

from ctxview.context import request_elide as re_
from ctxview.context.request_cost import pieces, stub_ids
from ctxview.proxy.rewrite import HELD_UPSTREAM

pytest.importorskip("openai")

CTXVIEW = Path(sys.executable).with_name("ctxview")
CALLS = 24  # about 10,000 characters each: the conversation upstream passes 180,000

CLIENT = textwrap.dedent("""
    import json, sys
    from openai import OpenAI

    client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY, as `ctxview run` sets them
    tools = [{"type": "function", "name": "cat", "description": "Print a file.",
              "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
    ask = dict(model="gpt-test", instructions="You read files.", tools=tools)

    def answer(**kw):
        if kw.pop("streamed", False):  # every other one streamed
            with client.responses.stream(**ask, **kw) as s:
                return s.get_final_response()
        return client.responses.create(**ask, **kw)

    r = answer(input="read every file")
    for i in range(int(sys.argv[1])):
        [call] = [o for o in r.output if o.type == "function_call"]
        path = json.loads(call.arguments)["path"]
        text = "".join(f"{path} line {j:03d} " + "z" * 80 + "\\n" for j in range(100))
        r = answer(previous_response_id=r.id, streamed=i % 2 == 1, input=[
            {"type": "function_call_output", "call_id": call.call_id, "output": text}])
    print(r.output_text)
    other = answer(input="and now something else")
    print(other.output_text)
""")


def test_a_chain_of_previous_response_ids_is_one_session_sent_as_it_came(
    tmp_path: Path,
) -> None:
    store = tmp_path / "state" / "store.db"
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "CTXVIEW"))}
    env.update(HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test-secret",
               CTXVIEW_STORE=str(store), XDG_CONFIG_HOME=str(tmp_path / "config"))  # fmt: skip
    steps: list[Call | Say] = [Call("cat", {"path": f"f{i}.txt"}) for i in range(CALLS)]
    steps += [Say("All read."), Say("Something else.")]
    with Scripted(steps) as api:
        done = subprocess.run(
            [str(CTXVIEW), "run", "--elide", "--upstream", f"http://127.0.0.1:{api.port}", "--",
             sys.executable, str(script), str(CALLS)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        sent, whole = list(api.requests), list(api.full_inputs)
    # The chain held: the scripted API refuses a continuation it cannot follow.
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert done.stdout.split() == ["All", "read.", "Something", "else."]
    assert len(sent) == CALLS + 2
    assert all(r.get("previous_response_id") for r in sent[1 : CALLS + 1])
    # Each continuation carried only its new item; the conversation upstream passed the
    # threshold, and nothing was elided: the proxy cannot see it, and must not cut the newest.
    assert all(len(r["input"]) == 1 for r in sent[1 : CALLS + 1])
    assert re_.messages_size(whole[CALLS]) > 180_000
    assert not stub_ids(sent)
    # Recorded exactly as sent, the chain one session and the other conversation its own.
    conn = sqlite3.connect(store)
    sessions = [s for (s,) in conn.execute("SELECT DISTINCT session FROM proxy_records")]
    conn.close()
    assert len(sessions) == 2
    rows: list[dict[str, Any]] = []
    for session in sessions:
        out = subprocess.run([str(CTXVIEW), "requests", session, "--json"], env=env,
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert out.returncode == 0, out.stderr
        rows += [json.loads(line) for line in out.stdout.splitlines()]
    rows.sort(key=lambda r: r["time"])
    assert [r["body"] for r in rows] == sent
    chain = {r["session"] for r in rows[: CALLS + 1]}
    assert len(chain) == 1 and rows[-1]["session"] not in chain
    [session] = chain
    assert session.startswith("px-")
    # The record says why a continuation went as it came.
    assert all(r["note"] == HELD_UPSTREAM for r in rows[1 : CALLS + 1])
    assert rows[0]["note"] is None and rows[-1]["note"] is None
    lines = subprocess.run([str(CTXVIEW), "requests", session], env=env, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert lines.returncode == 0, lines.stderr
    assert f"{CALLS + 1} proxied request(s)" in lines.stdout
    # `ctxview stats` prices the context the upstream ran each request on, the chain's whole
    # conversation rebuilt from its records (the scripted API's own, request for request):
    # every request reads all of the one before it, never a partial input taken as the whole.
    js = subprocess.run([str(CTXVIEW), "stats", "--json"], env=env, capture_output=True,
                        text=True, timeout=120)  # fmt: skip
    assert js.returncode == 0, js.stderr
    [row] = [s for s in json.loads(js.stdout)["sessions"] if s["id"] == session]
    chars = sum(sum(map(len, pieces({**b, "input": w})))
                for b, w in zip(sent[: CALLS + 1], whole, strict=False))  # fmt: skip
    for arm in ("replay_without_elision", "replay_with_elision"):
        replay = row["proxied"][arm]
        assert (replay["requests"], replay["cache_breaks"]) == (CALLS + 1, 0), arm
        assert replay["sent_chars"] == chars, arm
    assert not row["proxied"]["elided"]
