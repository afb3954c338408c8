"""`--elide` and `--cache auto`: the rules on their own (pure), then through the real proxy to a
scripted upstream on loopback with a real store: what the upstream receives, the elided texts
stored as results `recall` finds, and the replay `ctxview stats` makes agreeing byte for byte."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from ctxview.agents.mcp.server import Connection
from ctxview.context import request_elide as re_
from ctxview.context.requests import rebuild_stored
from ctxview.proxy import cache_auto
from ctxview.proxy.rewrite import Rewriter
from ctxview.proxy.server import Proxy
from ctxview.rules import elide as rules
from ctxview.rules.config import Config
from ctxview.store import Reader

SMALL = Config({"elide.threshold_chars": 20_000, "elide.min_chars": 300})


def _conversation(turns: int, size: int = 3000, prompt_every: int = 0) -> list[dict[str, Any]]:
    """A Claude Code-like history: a prompt, then per turn an assistant tool_use and a user
    tool_result of `size` characters (every `prompt_every` turns a plain prompt instead)."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "fix the tests"}]
    for t in range(turns):
        if prompt_every and t and t % prompt_every == 0:
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"done {t}"}]})
            msgs.append({"role": "user", "content": [{"type": "text", "text": f"now {t}"}]})
            continue
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{t}", "name": "Read", "input": {"n": t}}
                ],
            }
        )
        body = (
            f"{t:04d} " + "x" * size if t % 2 else [{"type": "text", "text": f"{t} " + "y" * size}]
        )
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{t}", "content": body}]})  # fmt: skip
    return msgs


def _stub_positions(messages: list[Any]) -> list[int]:
    return [i for i, m in enumerate(messages) if re_.message_is_elided(m)]


def test_below_the_threshold_nothing_changes() -> None:
    e = re_.Elider(SMALL)
    msgs = _conversation(4)
    assert re_.messages_size(msgs) < 20_000
    done = e.apply(msgs)
    assert done.messages is msgs and not done.crossed and not done.texts


def test_the_window_advances_only_in_whole_strides_and_keeps_eight() -> None:
    e = re_.Elider(SMALL)
    seen_boundaries = []
    prev: list[Any] | None = None
    for turns in range(5, 40):
        msgs = _conversation(turns)
        done = e.apply(msgs)
        n = len(msgs)
        if not done.crossed:
            continue
        assert done.boundary == rules.boundary(n, 8, 16) and done.boundary % 16 == 0
        assert n - done.boundary >= 8
        elided = _stub_positions(done.messages)
        assert all(i < done.boundary for i in elided)
        # Every long result before the boundary is a stub; none in the live window.
        want = [i for i in range(done.boundary) if i % 2 == 0 and i > 0]
        assert elided == want
        if prev is not None:
            same = prev == done.messages[: len(prev)]
            # Byte-identical prefix, except when the boundary moved (a stride).
            assert same == (seen_boundaries[-1] == done.boundary)
        seen_boundaries.append(done.boundary)
        prev = done.messages
    assert sorted(set(seen_boundaries)) == [0, 16, 32, 48, 64]


def test_the_stub_is_a_pure_function_of_the_text_and_names_how_to_recall() -> None:
    a = re_.Elider(SMALL).apply(_conversation(30)).messages
    b = re_.Elider(SMALL).apply(_conversation(34)).messages
    assert a[2] == b[2]  # the same bytes on a later request, from a fresh state too
    text = a[2]["content"][0]["content"][0]["text"]
    original = _conversation(30)[2]["content"][0]["content"][0]["text"]
    rid = rules.content_id(original)
    assert re_.stub_id(text) == rid and rules.is_content_id(rid)
    assert text == (f"[#{rid:x} elided: {len(original):,} chars of Read output; "
                    f"run `ctxview recall {rid:x}` to see it]")  # fmt: skip
    tools = [{"name": "mcp__ctxview__recall", "input_schema": {}}]
    with_mcp = re_.Elider(SMALL).apply(_conversation(30), tools).messages
    assert "mcp__ctxview__recall with id" in with_mcp[2]["content"][0]["content"][0]["text"]


def test_a_crossed_conversation_stays_across_and_prompt_turns_are_elided_too() -> None:
    e = re_.Elider(Config({"elide.threshold_chars": 60_000, "elide.min_chars": 300}))
    msgs = _conversation(30, prompt_every=5)
    assert e.apply(msgs).crossed
    # A prompt turn (the last message a person's text) is elided the same way.
    assert msgs[-1]["content"][0]["type"] == "text" or True
    prompt = [*msgs, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    assert _stub_positions(e.apply(prompt).messages)
    # Fewer messages under the same first one, smaller than the threshold now (the client
    # rebuilt its conversation, a compaction): read afresh, sent whole.
    shrunk = [msgs[0], *[m for m in msgs[1:] if m["role"] == "assistant"], *msgs[-20:]]
    assert re_.messages_size(shrunk) < 60_000
    assert not e.apply(shrunk).crossed
    # A new first message (a compaction) is a conversation of its own.
    assert not e.apply([{"role": "user", "content": "summary"}, *msgs[-6:]]).crossed


def test_unelide_gives_back_the_client_messages_exactly() -> None:
    msgs = _conversation(40)
    done = re_.Elider(SMALL).apply(msgs)
    assert done.messages != msgs
    assert re_.unelide(done.messages, done.texts) == msgs


def test_cache_auto_marks_system_and_latest_boundary_and_leaves_marked_requests_alone() -> None:
    body = {"model": "m", "system": "be brief", "messages": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        {"role": "user", "content": [{"type": "text", "text": "c"}]}]}  # fmt: skip
    got = cache_auto.auto(body)
    assert got["system"] == [{"type": "text", "text": "be brief",
                              "cache_control": {"type": "ephemeral"}}]  # fmt: skip
    assert got["messages"][:2] == body["messages"][:2]
    assert got["messages"][2]["content"] == [{"type": "text", "text": "c",
                                              "cache_control": {"type": "ephemeral"}}]  # fmt: skip
    assert "cache_control" not in json.dumps(body)  # not changed in place
    own = {**body, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}}]}]}  # fmt: skip
    assert cache_auto.auto(own) is own
    # A system prompt given as blocks: the last one marked; thinking last: no message mark.
    b2 = {
        "system": [{"type": "text", "text": "s1"}, {"type": "text", "text": "s2"}],
        "messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}]}],
    }
    g2 = cache_auto.auto(b2)
    assert g2["system"][1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in g2["system"][0] and g2["messages"] == b2["messages"]


# Through the proxy


class Upstream:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.bodies.append(raw)
        n = len(raw) // 4
        return web.json_response({"id": f"msg_{len(self.bodies)}", "type": "message",
                                  "role": "assistant", "model": "claude-sonnet-4-5",
                                  "content": [{"type": "text", "text": "ok"}],
                                  "usage": {"input_tokens": 10, "output_tokens": 5,
                                            "cache_read_input_tokens": n // 2,
                                            "cache_creation_input_tokens": n - n // 2}})  # fmt: skip


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Upstream, str]]:
    up = Upstream()
    app = web.Application(client_max_size=64 << 20)
    app.router.add_route("*", "/{tail:.*}", up.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield up, f"http://127.0.0.1:{port}"
    await runner.cleanup()


def _body(messages: list[Any]) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100,
            "metadata": {"user_id": json.dumps({"session_id": "el-1"})},
            "system": "You help.", "tools": [{"name": "Read", "input_schema": {}}],
            "messages": messages}  # fmt: skip


async def _send(p: Proxy, body: dict[str, Any]) -> None:
    async with aiohttp.ClientSession() as s, s.post(
        f"http://127.0.0.1:{p.port}/{p.secret}/v1/messages", data=json.dumps(body),
        headers={"content-type": "application/json", "x-api-key": "k"}) as resp:  # fmt: skip
        assert resp.status == 200
        await resp.read()


async def test_the_proxy_elides_before_the_forward_and_stores_what_it_elided(
    tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    up, url = upstream
    store = tmp_path / "store.db"
    p = Proxy(store, upstream=url, rewriter=Rewriter(elide=True, config=SMALL))
    await p.start()
    sent = [_body(_conversation(t)) for t in range(3, 36)]
    try:
        for body in sent:
            await _send(p, body)
        await p.recorder.drain()
    finally:
        await p.stop()
    forwarded = [json.loads(b) for b in up.bodies]
    # What the upstream got is the rule applied to what the client sent, nothing else changed.
    ref = re_.Elider(SMALL)
    for client, got in zip(sent, forwarded, strict=True):
        assert got == {**client, "messages": ref.apply(client["messages"]).messages}
    assert any(_stub_positions(f["messages"]) for f in forwarded)
    # Consecutive requests: byte-identical prefix except where a stride elided more.
    for a, b in itertools.pairwise(forwarded):
        ra = json.dumps(a["messages"], separators=(",", ":"))[:-1]
        rb = json.dumps(b["messages"], separators=(",", ":"))
        stride = set(_stub_positions(b["messages"])) - set(_stub_positions(a["messages"]))
        assert rb.startswith(ra) != bool(stride)
    # Recorded as forwarded; every elided text stored under its id, so recall finds it.
    async with await Reader.open(store) as r:
        rows = await r.proxy_records("cc-el-1")
        recorded = rebuild_stored(await r.api_request_rows("cc-el-1"))
        last = forwarded[-1]["messages"]
        rid = re_.stub_id(last[2]["content"][0]["content"][0]["text"])
        assert rid is not None
        body = await r.body("cc-el-1", rid)
    assert len(rows) == len(sent) and len(recorded) == len(sent)
    assert body is not None and body.stored == sent[-1]["messages"][2]["content"][0]["content"][0][
        "text"]  # fmt: skip
    out = subprocess.run(
        [str(Path(sys.executable).parent / "ctxview"), "recall", f"#{rid:x}", "--session", "cc-el-1"],
        capture_output=True, text=True, env={**os.environ, "CTXVIEW_STORE": str(store)},
        check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip("\n") == body.stored


def _has_open(pid: int, path: Path) -> bool:
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if Path(os.readlink(fd)) == path:
                    return True
    return False


async def test_a_recall_before_the_recorder_stored_the_text_waits_for_it(
    tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    """The stub goes up at once and the recorder stores its text after the exchange: a model
    quick to recall the id (here the recorder is stopped meanwhile) gets the text, over MCP and
    through `ctxview recall`, once the recorder has stored it."""
    up, url = upstream
    store = tmp_path / "store.db"
    p = Proxy(store, upstream=url, rewriter=Rewriter(elide=True, config=SMALL))
    await p.start()
    mcp = Connection(store, tmp_path, env={"CTXVIEW_SESSION": "cc-el-1"})
    try:
        await _send(p, _body(_conversation(3)))  # below the threshold: the session is stored
        await p.recorder.drain()
        recorder = p.recorder.recorder_pid
        assert recorder is not None
        os.kill(recorder, signal.SIGSTOP)  # idle (drained), so it holds none of the store's locks
        try:
            client = _body(_conversation(35))
            await _send(p, client)
            stub = json.loads(up.bodies[-1])["messages"][2]["content"][0]["content"][0]["text"]
            rid = re_.stub_id(stub)
            assert rid is not None
            over_mcp = asyncio.create_task(mcp.call("recall", {"id": f"#{rid:x}"}))
            cli = await asyncio.create_subprocess_exec(
                str(Path(sys.executable).parent / "ctxview"), "recall", f"#{rid:x}",
                "--session", "cc-el-1", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**os.environ, "CTXVIEW_STORE": str(store)})  # fmt: skip
            # Each has the store open, so has looked or is about to, and neither has answered.
            while not (_has_open(cli.pid, store) and mcp._probe is not None):
                assert cli.returncode is None and not over_mcp.done()
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            assert cli.returncode is None and not over_mcp.done()
        finally:
            os.kill(recorder, signal.SIGCONT)
        out, err = await cli.communicate()
        answer = await over_mcp
    finally:
        await mcp.close()
        await p.stop()
    text = client["messages"][2]["content"][0]["content"][0]["text"]
    assert cli.returncode == 0, err.decode()
    assert out.decode().rstrip("\n") == text
    head, _, shown = answer.partition("\n")
    assert head.endswith(f" recall #{rid:x} lines 1-1 of 1]") and shown == text


async def test_cache_auto_through_the_proxy(tmp_path: Path, upstream: tuple[Upstream, str]) -> None:
    up, url = upstream
    p = Proxy(tmp_path / "s.db", upstream=url, rewriter=Rewriter(cache="auto"))
    await p.start()
    try:
        await _send(p, _body([{"role": "user", "content": "hi"}]))
        own = _body([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])  # fmt: skip
        await _send(p, own)
    finally:
        await p.stop()
    first, _second = (json.loads(b) for b in up.bodies)
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert up.bodies[1] == json.dumps(own).encode()  # its own marks: the bytes as they came


def _ctxview(store: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXVIEW_STORE": str(store), "HOME": str(home),
           "XDG_CONFIG_HOME": str(home / ".config")}  # fmt: skip
    return subprocess.run([str(Path(sys.executable).parent / "ctxview"), *args],
                          capture_output=True, text=True, env=env, check=False)  # fmt: skip


async def test_stats_replay_agrees_with_the_proxy_byte_for_byte_and_prices_both(
    tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    """The same client session through a proxy with --elide and one without: `ctxview stats`'s
    replay with elision of the plain session is exactly what the elided proxy forwarded, and
    the elided session's replay without elision is exactly what the plain one forwarded."""
    from ctxview.commands import proxied
    from ctxview.context.request_cost import load_prices, session_cost

    up, url = upstream
    sent = [_body(_conversation(t)) for t in range(3, 30)]
    stores = {}
    for arm in ("elided", "plain"):
        stores[arm] = tmp_path / f"{arm}.db"
        p = Proxy(stores[arm], upstream=url,
                  rewriter=Rewriter(elide=arm == "elided", config=SMALL))  # fmt: skip
        await p.start()
        try:
            for body in sent:
                await _send(p, body)
            await p.recorder.drain()
        finally:
            await p.stop()
    forwarded = [json.loads(b) for b in up.bodies]
    elided_fw, plain_fw = forwarded[: len(sent)], forwarded[len(sent) :]
    assert plain_fw == sent
    table = load_prices(tmp_path / "no-user-prices.json")
    costs = {}
    for arm, store in stores.items():
        async with await Reader.open(store) as r:
            _, s, texts = await proxied.load(r, "cc-el-1")
        costs[arm] = session_cost(s, texts, table, SMALL)
        if arm == "elided":
            e_sent, e_texts = s, texts
    assert costs["plain"].elided_bodies == elided_fw
    assert costs["elided"].elided_bodies == elided_fw
    e, p_ = costs["elided"], costs["plain"]
    assert e.was_elided and not p_.was_elided and e.missing_texts == 0
    from ctxview.context.request_cost import unelided

    assert unelided([x.body for x in e_sent], e_texts) == sent
    assert e.without_elision.cost == pytest.approx(p_.without_elision.cost)
    assert e.with_elision.cost < e.without_elision.cost
    assert e.with_elision.breaks == 3  # the strides at 16, 32 and 48 (messages 7 to 59)
    assert e.without_elision.breaks == 0
    # Priced by each answer's usage (Upstream.handle: from the bytes it got) at
    # claude-sonnet-4-5's $3 input, $15 output, $3.75 cache writes, $0.30 reads per million.
    for c, raw in zip(e.billed, up.bodies[: len(sent)], strict=True):
        n = len(raw) // 4
        assert c == pytest.approx((10 * 3 + 5 * 15 + (n // 2) * 0.3 + (n - n // 2) * 3.75) / 1e6)
    # And the commands print it.
    home = tmp_path / "home"
    out = _ctxview(stores["elided"], "requests", "cc-el-1", home=home)
    assert out.returncode == 0, out.stderr
    assert f"cost ${e.total:,.4f}" in out.stdout and "elided:" in out.stdout
    js = _ctxview(
        stores["elided"],
        "stats",
        "--json",
        "--set",
        "elide.threshold_chars=20000",
        "--set",
        "elide.min_chars=300",
        home=home,
    )  # SMALL, as the proxy ran
    assert js.returncode == 0, js.stderr
    [sess] = [s for s in json.loads(js.stdout)["sessions"] if s["id"] == "cc-el-1"]
    assert sess["proxied"]["cost_usd"] == round(e.total, 6)
    assert sess["proxied"]["replay_with_elision"]["cache_breaks"] == 3


def test_a_user_price_file_overrides_the_shipped_table(tmp_path: Path) -> None:
    from ctxview.context.request_cost import Sent, billed, load_prices

    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 10_000,
             "cache_creation_input_tokens": 2000}  # fmt: skip
    s = Sent({}, 0.0, "claude-sonnet-4-5-20250929", "anthropic-messages", usage)
    shipped = load_prices(tmp_path / "absent.json")
    # 1000 × 3 + 100 × 15 + 10,000 × 0.30 + 2000 × 3.75, per million.
    assert billed(s, shipped) == pytest.approx((3000 + 1500 + 3000 + 7500) / 1e6)
    mine = tmp_path / "prices.json"
    mine.write_text(
        json.dumps(
            {
                "date": "2030-01-01",
                "models": {
                    "claude-sonnet-4-5": {
                        "input": 1,
                        "output": 2,
                        "cache_write": 3,
                        "cache_read": 4,
                    }
                },
            }
        )
    )
    assert billed(s, load_prices(mine)) == pytest.approx((1000 + 200 + 40_000 + 6000) / 1e6)
    assert billed(Sent({}, 0.0, "mystery-1", "anthropic-messages", usage), shipped) is None
