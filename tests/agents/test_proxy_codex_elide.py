"""The real Codex 0.169.0 through `ctxview run --elide -- codex exec …` on the scripted Responses
API, pushed past the threshold (180,000 characters) by large command outputs: its
`function_call_output` items leave as stubs exactly where the rules put them, at whole strides
of 16 items; consecutive requests send a byte-identical `input` prefix except at a stride; the
model, running the `ctxview recall ID` its stub names through Codex's own shell, gets the full
text back; and `ctxview requests` / `ctxview stats` price the session with and without
elision, the replay with it byte-equal to what went up."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from codex_helpers import CONFIG, CTXVIEW, exec_through_ctxview, needs_codex, proxied_env
from fake_openai import Call, Say, Scripted, tool_outputs

from ctxview.context import request_elide as re_
from ctxview.context.request_cost import load_prices, session_cost, stub_ids, unelided
from ctxview.rules.config import Config
from ctxview.store import Reader

CALLS = 34  # about 7,300 characters each: the threshold passed near call 22
THRESHOLD = 180_000

pytestmark = needs_codex


class RecallTheFirstStub(Call):
    """The model runs, through Codex's shell, the command the first stub it was sent names."""

    def __init__(self) -> None:
        super().__init__("exec_command", {})
        self.rid: int | None = None

    def item(self, request: dict[str, Any]) -> dict[str, Any]:
        # Read before `args`: fake_openai builds the call from `item` first.
        stub = next(t for m in request.get("input", []) for _, t, _ in re_.results(m)
                    if re_.stub_id(t) is not None)  # fmt: skip
        self.rid = re_.stub_id(stub)
        command = stub.split("run `", 1)[1].split("`", 1)[0]  # as the stub words it
        self.args = {"cmd": command}
        return super().item(request)


def _big_files(work: Path) -> None:
    """CALLS files of 100 lines, about 7,300 characters each."""
    for i in range(CALLS):
        (work / f"big{i}.txt").write_text("\n".join(f"{i:02d} line {j:03d} " + "z" * 58
                                                    for j in range(100)) + "\n")  # fmt: skip


def _read_all(work: Path, env: dict[str, str], reads: list[Call], recall: Call
              ) -> list[dict[str, Any]]:  # fmt: skip
    """Codex through `ctxview run --elide` while the scripted model makes `reads`, then
    `recall`, then ends: every request Codex sent, one a step."""
    with Scripted([*reads, recall, Say("All read.")]) as api:
        exec_through_ctxview(api.port, work, env, "read every big file", elide=True, timeout=600)
        sent = list(api.requests)
    assert len(sent) == CALLS + 2
    return sent


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def test_codex_elided_at_the_strides_and_recalled_through_its_shell(tmp_path: Path) -> None:
    home, codex_home, work = tmp_path / "home", tmp_path / "codex", tmp_path / "work"
    for d in (home, codex_home, work):
        d.mkdir()
    (codex_home / "config.toml").write_text(CONFIG)
    # Under Codex's own cap for a command's output (about 10,000 characters), so each output
    # reaches the request whole and its recall too.
    _big_files(work)
    # ctxview on the PATH of Codex's shell, as an installed one is: Codex runs its commands in
    # a login shell, whose profile sets PATH afresh.
    (home / ".bash_profile").write_text(f'export PATH="{CTXVIEW.parent}:$PATH"\n')
    store = tmp_path / "state" / "store.db"
    config_home = home / ".config"
    (config_home / "ctxview").mkdir(parents=True)
    # The scripted model's name priced by a user file (the shipped table has no `gpt-test`).
    (config_home / "ctxview" / "prices.json").write_text(json.dumps({"date": "2026-12-01",
        "models": {"gpt-test": {"input": 1.25, "output": 10, "cache_write": 1.25,
                                "cache_read": 0.125}}}))  # fmt: skip
    env = proxied_env(home, codex_home, store, XDG_CONFIG_HOME=str(config_home),
                      PATH=f"{CTXVIEW.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")  # fmt: skip
    recall = RecallTheFirstStub()
    sent = _read_all(work, env, [Call("exec_command", {"cmd": f"cat big{i}.txt"})
                                 for i in range(CALLS)], recall)  # fmt: skip
    session = f"cx-{sent[0]['prompt_cache_key']}"
    ids = stub_ids(sent)
    conn = sqlite3.connect(store)
    texts = {int(r): t for r, t in conn.execute(
        "SELECT rid, CAST(stored AS TEXT) FROM bodies WHERE session = ?", (session,))
        if int(r) in ids}  # fmt: skip
    conn.close()
    assert ids and set(texts) == set(ids)  # every stub's text stored under its id
    # What Codex sent, the stubs' texts put back; the rules over it give what went up.
    client = unelided(sent, texts)
    elider = re_.Elider(Config())
    boundaries = []
    for mine, got in zip(client, sent, strict=True):
        applied = elider.apply(mine["input"], mine.get("tools"))
        assert got == {**mine, "input": applied.messages}
        boundaries.append(applied.boundary)
        elided = [i for i, m in enumerate(got["input"]) if re_.message_is_elided(m)]
        assert all(i < applied.boundary for i in elided)
        # Every output item before the boundary is a stub (they are all long): exactly there.
        assert elided == [i for i, m in enumerate(got["input"][: applied.boundary])
                          if m.get("type") == "function_call_output"]  # fmt: skip
    assert all(b % 16 == 0 for b in boundaries)
    assert len({b for b in boundaries if b}) >= 2  # at least two strides
    # The threshold on Codex's own input: nothing elided until it passes 180,000, and from
    # the first request past it every request elided (the session stays across).
    sizes = [re_.messages_size(c["input"]) for c in client]
    assert sizes == sorted(sizes) and sizes[-1] > THRESHOLD
    crossed = [s > THRESHOLD for s in sizes]
    assert [bool(stub_ids([g])) for g in sent] == [
        c or any(crossed[:i]) for i, c in enumerate(crossed)]  # fmt: skip
    # Consecutive requests: the input prefix byte-identical, except at a stride.
    for (a, ba), (b, bb) in itertools.pairwise(zip(sent, boundaries, strict=True)):
        same = _compact(b["input"]).startswith(_compact(a["input"])[:-1])
        newly = {i for i, m in enumerate(b["input"]) if re_.message_is_elided(m)} - {
            i for i, m in enumerate(a["input"]) if re_.message_is_elided(m)}  # fmt: skip
        assert same == (not newly), (ba, bb)
        assert not newly or bb > ba
    # The stub names the way back through Codex's shell (no ctxview MCP tools here), and the
    # model that ran it got the whole text.
    assert recall.rid is not None and recall.rid in texts
    stub = next(t for m in sent[CALLS]["input"] for _, t, _ in re_.results(m)
                if re_.stub_id(t) == recall.rid)  # fmt: skip
    assert stub.endswith(f"run `ctxview recall {recall.rid:x}` to see it]")
    [answer] = [v for k, v in tool_outputs(sent[-1]).items()
                if k == sent[-1]["input"][-1]["call_id"]]  # fmt: skip
    assert "Process exited with code 0" in answer
    assert texts[recall.rid].rstrip("\n") in answer
    # The cost replays: with elision byte-equal to what went up, without it what Codex sent.
    out = subprocess.run([str(CTXVIEW), "requests", session], env=env, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "elided:" in out.stdout and "cost $" in out.stdout
    js = subprocess.run([str(CTXVIEW), "stats", "--json"], env=env, capture_output=True,
                        text=True, timeout=120)  # fmt: skip
    assert js.returncode == 0, js.stderr
    [row] = [s for s in json.loads(js.stdout)["sessions"] if s["id"] == session]
    proxied = row["proxied"]
    assert proxied["elided"] and proxied["missing_texts"] == 0 and proxied["unpriced"] == 0
    strides = len(set(boundaries) - {0})
    assert proxied["replay_with_elision"]["cache_breaks"] == strides
    assert proxied["replay_without_elision"]["cache_breaks"] == 0
    assert proxied["replay_with_elision"]["cost_usd"] < proxied["replay_without_elision"][
        "cost_usd"]  # fmt: skip
    cost = asyncio.run(_cost(store, session, config_home))
    assert cost.elided_bodies == sent
    assert unelided(sent, texts) == client
    assert b"sk-test-secret" not in store.read_bytes()


async def _cost(store: Path, session: str, config_home: Path) -> Any:
    from ctxview.commands import proxied

    async with await Reader.open(store) as r:
        _, s, texts = await proxied.load(r, session)
    return session_cost(s, texts, load_prices(config_home / "ctxview" / "prices.json"), Config())


class RecallOverMcp(Call):
    """The model calls ctxview's MCP `recall` with the id the first stub it was sent names."""

    def __init__(self) -> None:
        super().__init__("recall", {}, server="ctxview")
        self.rid: int | None = None
        self.stub = ""

    def item(self, request: dict[str, Any]) -> dict[str, Any]:
        self.stub = next(t for m in request.get("input", []) for _, t, _ in re_.results(m)
                         if re_.stub_id(t) is not None)  # fmt: skip
        self.rid = re_.stub_id(self.stub)
        assert self.rid is not None
        self.args = {"id": f"#{self.rid:x}"}
        return super().item(request)


def test_codex_with_ctxview_installed_is_told_its_mcp_recall_and_gets_the_text(
    tmp_path: Path,
) -> None:
    """`ctxview install codex` switches Codex's shell off: the stub names ctxview's recall as
    Codex 0.169 offers it (`recall` in the `mcp__ctxview` namespace), and that call gives the
    text back from the proxy's session, the one the MCP server answers in."""
    from ctxview.agents.codex import install as codex_install

    home, codex_home, work = tmp_path / "home", tmp_path / "codex", tmp_path / "work"
    for d in (home, codex_home, work):
        d.mkdir()
    store = tmp_path / "state" / "store.db"
    (codex_home / "config.toml").write_text(CONFIG)
    codex_install.install(codex_home, store=store).write()
    _big_files(work)
    env = proxied_env(home, codex_home, store, XDG_CONFIG_HOME=str(home / ".config"))
    recall = RecallOverMcp()
    sent = _read_all(work, env, [Call("read", {"path": f"big{i}.txt"}, server="ctxview")
                                 for i in range(CALLS)], recall)  # fmt: skip
    assert "exec_command" not in json.dumps(sent[0]["tools"])  # the shell is off
    # Every read answered, the first too (it can come before anything wrote the store).
    outputs = tool_outputs(sent[-1])
    assert len(outputs) == CALLS + 1 and not [o for o in outputs.values() if "Error" in o]
    assert recall.rid is not None
    assert recall.stub.endswith(f"; the recall tool of mcp__ctxview with id #{recall.rid:x} "
                                "shows it]")  # fmt: skip
    # The elision is the rule's, as for the shell: what went up is the rule over what Codex sent.
    session = f"cx-{sent[0]['prompt_cache_key']}"
    conn = sqlite3.connect(store)
    texts = {
        int(r): t
        for r, t in conn.execute(
            "SELECT rid, CAST(stored AS TEXT) FROM bodies WHERE session = ?", (session,)
        )
    }
    conn.close()  # fmt: skip
    elider = re_.Elider(Config())
    for mine, got in zip(unelided(sent, texts), sent, strict=True):
        assert got == {**mine, "input": elider.apply(mine["input"], mine.get("tools")).messages}
    [answer] = [v for k, v in tool_outputs(sent[-1]).items()
                if k == sent[-1]["input"][-1]["call_id"]]  # fmt: skip
    # The MCP recall answers with the text the proxy stored: the read's own answer (its part
    # after Codex's `Wall time` line), every line of it.
    whole = texts[recall.rid]
    assert whole.startswith("[#") and "big" in whole.splitlines()[0]
    lines = whole.rstrip("\n").splitlines()
    assert len(lines) == 101 and all(line in answer for line in lines[1:])
