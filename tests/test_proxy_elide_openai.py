"""`--elide` on the OpenAI protocols: Responses (Codex: a tool result is a whole
`function_call_output` item of `input`) and Chat Completions (a `role: "tool"` message), by
the same rule code as Anthropic Messages (`context/request_elide.py`). The rule on its own
(pure), then through the real proxy to a scripted upstream on loopback with a real store: what
the upstream receives, the elided texts stored so `recall` finds them, and `ctxview stats`'s
replay agreeing byte for byte with what the proxy sent."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from ctxview.context import request_elide as re_
from ctxview.context.request_cost import load_prices, session_cost, unelided
from ctxview.context.request_diff import diffs
from ctxview.proxy.rewrite import Rewriter
from ctxview.proxy.server import Proxy
from ctxview.rules import elide as rules
from ctxview.rules.config import Config
from ctxview.store import Reader

SMALL = Config({"elide.threshold_chars": 20_000, "elide.min_chars": 300})
CTXVIEW = Path(sys.executable).with_name("ctxview")
SID = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
CODEX_HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-x",
                 "originator": "codex_exec", "user-agent": "codex_exec/0.169.0",
                 "session-id": SID}  # fmt: skip


def _output(t: int, size: int) -> str:
    return f"Chunk ID: {t:06x}\nWall time: 0.0000 seconds\nOutput:\n" + f"{t:04d} " * (size // 5)


def responses_input(turns: int, size: int = 3000, prompt_every: int = 0) -> list[dict[str, Any]]:
    """A Codex-like `input`: two developer messages and the prompt, then per turn a
    `function_call` item and its `function_call_output` of about `size` characters (every
    `prompt_every` turns an assistant message and a new prompt instead)."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "<permissions>none</permissions>"}]},
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix"}]},
    ]  # fmt: skip
    for t in range(turns):
        if prompt_every and t and t % prompt_every == 0:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": f"done {t}"}],
                }
            )
            items.append({"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": f"now {t}"}]})  # fmt: skip
            continue
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{t}",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": f"cat f{t}"}),
                "call_id": f"call_{t}",
            }
        )
        text = _output(t, size)
        # Mostly a string, as Codex sends it; every third as one content part.
        out: Any = text if t % 3 else [{"type": "input_text", "text": text}]
        items.append({"type": "function_call_output", "id": f"fco_{t}", "call_id": f"call_{t}",
                      "output": out})  # fmt: skip
    return items


def chat_messages(turns: int, size: int = 3000) -> list[dict[str, Any]]:
    """A Chat Completions history: system, prompt, then per turn an assistant message with one
    `tool_calls` entry and its `role: "tool"` answer."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You help."},
                                  {"role": "user", "content": "fix the tests"}]  # fmt: skip
    for t in range(turns):
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{t}",
                        "type": "function",
                        "function": {
                            "name": "shell",
                            "arguments": json.dumps({"cmd": f"cat f{t}"}),
                        },
                    }
                ],
            }
        )
        text = _output(t, size)
        content: Any = text if t % 2 else [{"type": "text", "text": text}]
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": content})
    return msgs  # fmt: skip


def _results_at(conversation: list[Any]) -> list[int]:
    """Where the long tool results are (the entries the rule may elide)."""
    return [i for i, m in enumerate(conversation) if any(len(t) > 300 for _, t, _ in
                                                         re_.results(m))]  # fmt: skip


def _stub_positions(conversation: list[Any]) -> list[int]:
    return [i for i, m in enumerate(conversation) if re_.message_is_elided(m)]


BUILDERS: dict[str, Callable[[int], list[dict[str, Any]]]] = {
    "responses": responses_input,
    "chat": chat_messages,
}


@pytest.mark.parametrize("protocol", BUILDERS)
def test_the_window_advances_in_whole_strides_of_entries_and_keeps_eight(protocol: str) -> None:
    build = BUILDERS[protocol]
    e = re_.Elider(SMALL)
    boundaries: list[int] = []
    prev: list[Any] | None = None
    for turns in range(3, 40):
        conv = build(turns)
        done = e.apply(conv)
        if not done.crossed:
            assert done.messages is conv and re_.messages_size(conv) <= 20_000
            continue
        n = len(conv)
        # A stride is 16 entries of the conversation: items (Responses), messages (Chat).
        assert done.boundary == rules.boundary(n, 8, 16) and done.boundary % 16 == 0
        assert n - done.boundary >= 8
        # Exactly the long results older than the window are stubs, nothing else changed.
        assert _stub_positions(done.messages) == [
            i for i in _results_at(conv) if i < done.boundary]  # fmt: skip
        for i, (a, b) in enumerate(zip(conv, done.messages, strict=True)):
            if i not in _stub_positions(done.messages):
                assert a == b
        assert re_.unelide(done.messages, done.texts) == conv
        if prev is not None:
            same = json.dumps(done.messages).startswith(json.dumps(prev)[:-1])
            assert same == (boundaries[-1] == done.boundary)  # a break only at a stride
        boundaries.append(done.boundary)
        prev = done.messages
    assert {0, 16, 32, 48} <= set(boundaries)


def test_a_responses_stub_is_the_whole_output_item_in_its_own_form_and_stable() -> None:
    a = re_.Elider(SMALL).apply(responses_input(30)).messages
    b = re_.Elider(SMALL).apply(responses_input(36)).messages
    conv = responses_input(30)
    i = _stub_positions(a)[0]
    assert a[i] == b[i]  # the same bytes on a later request, from a fresh state too
    item, was = a[i], conv[i]
    assert {k: v for k, v in item.items() if k != "output"} == {
        k: v for k, v in was.items() if k != "output"}  # fmt: skip
    text = was["output"] if isinstance(was["output"], str) else was["output"][0]["text"]
    rid = rules.content_id(text)
    stub = (f"[#{rid:x} elided: {len(text):,} chars of exec_command output; "
            f"run `ctxview recall {rid:x}` to see it]")  # fmt: skip
    assert item["output"] == (stub if isinstance(was["output"], str)
                              else [{"type": "input_text", "text": stub}])  # fmt: skip
    assert re_.stub_id(stub) == rid and rules.is_content_id(rid)
    # Both forms elided: the string outputs and the one-part ones.
    forms = {type(a[j]["output"]).__name__ for j in _stub_positions(a)}
    assert forms == {"str", "list"}


def test_the_stub_names_recall_as_the_client_offers_it() -> None:
    def first_stub(conv: list[Any], tools: Any) -> str:
        done = re_.Elider(SMALL).apply(conv, tools).messages
        return next(t for m in done for _, t, _ in re_.results(m) if re_.stub_id(t))

    # Codex 0.169 with `ctxview install codex`: `recall` inside the `mcp__ctxview` namespace.
    codex = [{"type": "namespace", "name": "mcp__ctxview", "description": "ctxview's tools",
              "tools": [{"type": "function", "name": "bash"},
                        {"type": "function", "name": "recall"}]}]  # fmt: skip
    got = first_stub(responses_input(30), codex)
    rid = re_.stub_id(got)
    assert rid is not None
    assert got.endswith(f"; the recall tool of mcp__ctxview with id #{rid:x} shows it]")
    # A flattened name (older Codex, a Chat client with MCP tools as functions).
    flat = [{"type": "function", "function": {"name": "mcp__ctxview__recall"}}]
    got = first_stub(chat_messages(30), flat)
    assert "of shell output; mcp__ctxview__recall with id #" in got
    # None offered: through the shell.
    assert "; run `ctxview recall " in first_stub(chat_messages(30), [{"type": "function",
                                                   "function": {"name": "shell"}}])  # fmt: skip


def test_a_crossed_codex_conversation_stays_across_prompt_turns_included() -> None:
    e = re_.Elider(Config({"elide.threshold_chars": 60_000, "elide.min_chars": 300}))
    conv = responses_input(30, prompt_every=5)
    assert e.apply(conv).crossed
    prompt = [*conv, {"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": "go on"}]}]  # fmt: skip
    assert _stub_positions(e.apply(prompt).messages)
    # Fewer items under the same first ones (a compaction, as Codex's keeps its developer
    # messages first): the threshold reads the rebuilt conversation afresh.
    shrunk = conv[:3] + conv[-20:]
    assert re_.messages_size(shrunk) < 60_000 and not e.apply(shrunk).crossed


def test_a_result_of_several_parts_has_each_long_text_part_elided_and_the_rest_kept() -> None:
    """Codex sends an MCP tool's result as two text parts (its own `Wall time` line, then the
    tool's text): the long one leaves as a stub, the short one and any part that is not bare
    text (an image, a part with other keys) stay; an entry that is not an object stays too."""
    conv: list[Any] = responses_input(30)
    mcp = {
        "type": "function_call_output",
        "call_id": "call_m",
        "output": [
            {"type": "input_text", "text": "Wall time: 0.0161 seconds\nOutput:"},
            {"type": "input_text", "text": "[#1000 big.txt lines 1-90 of 90]\n" + "a" * 4000},
        ],
    }
    image = {
        "type": "function_call_output",
        "call_id": "call_i",
        "output": [
            {"type": "input_image", "image_url": "data:," + "i" * 4000},
            {"type": "input_text", "text": "c" * 4000, "annotations": []},
        ],
    }
    tool_parts = {"role": "tool", "tool_call_id": "c", "content": [
        {"type": "text", "text": "b" * 4000}, {"type": "text", "text": "c"}]}  # fmt: skip
    conv[4:4] = [mcp, image, tool_parts, {"role": "tool", "content": 7}]
    done = re_.Elider(SMALL).apply(conv)
    assert done.crossed and done.boundary > 8
    got = done.messages[4:8]
    assert got[0]["output"][0] == mcp["output"][0]
    whole = mcp["output"][1]["text"]
    assert got[0]["output"][1] == {"type": "input_text", "text": rules.request_stub(
        whole, None, None, SMALL)}  # fmt: skip
    assert got[1] == image and got[3] == conv[7]
    assert got[2]["content"][0]["text"].startswith("[#") and got[2]["content"][1]["text"] == "c"
    assert re_.unelide(done.messages, done.texts) == conv


# Through the proxy


class Upstream:
    """Answers a Responses request with a response and a Chat one with a completion, usage
    from the bytes it got (so a price depends on what was forwarded)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.bodies.append(raw)
        n = len(raw) // 4
        if request.path.endswith("/chat/completions"):
            return web.json_response({"id": f"c{len(self.bodies)}", "object": "chat.completion",
                                      "model": "gpt-5", "choices": [{"index": 0, "message": {
                                          "role": "assistant", "content": "ok"},
                                          "finish_reason": "stop"}],
                                      "usage": {"prompt_tokens": n, "completion_tokens": 5,
                                                "prompt_tokens_details": {
                                                    "cached_tokens": n // 2}}})  # fmt: skip
        return web.json_response({"id": f"resp_{len(self.bodies)}", "object": "response",
                                  "model": "gpt-5", "status": "completed",
                                  "output": [{"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text",
                                                           "text": "ok"}]}],
                                  "usage": {"input_tokens": n, "output_tokens": 5,
                                            "input_tokens_details": {
                                                "cached_tokens": n // 2}}})  # fmt: skip


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


def codex_body(turns: int) -> dict[str, Any]:
    return {"model": "gpt-5", "instructions": "You are Codex.", "input": responses_input(turns),
            "tools": [{"type": "function", "name": "exec_command", "parameters": {}}],
            "tool_choice": "auto", "stream": False, "store": False,
            "prompt_cache_key": SID}  # fmt: skip


async def _post(p: Proxy, path: str, data: bytes, headers: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{p.port}/{p.secret}{path}"
    async with aiohttp.ClientSession() as s, s.post(url, data=data, headers=headers) as resp:
        assert resp.status == 200
        await resp.read()


def _ctxview(store: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXVIEW_STORE": str(store), "HOME": str(home),
           "XDG_CONFIG_HOME": str(home / ".config")}  # fmt: skip
    return subprocess.run([str(CTXVIEW), *args], capture_output=True, text=True, env=env,
                          check=False, timeout=120)  # fmt: skip


async def test_a_codex_session_through_the_proxy_matches_the_stats_replay_byte_for_byte(
    tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    """The same Codex-like session through a proxy with --elide and one without: what the
    elided proxy forwarded is the rule over what the client sent; `ctxview stats`'s replay with
    elision of either session is exactly that, its replay without elision exactly what the
    plain proxy forwarded; `recall` gives a stub's text back."""
    from ctxview.commands import proxied

    up, url = upstream
    sent = [codex_body(t) for t in range(3, 30)]
    stores: dict[str, Path] = {}
    for arm in ("elided", "plain"):
        stores[arm] = tmp_path / f"{arm}.db"
        p = Proxy(stores[arm], upstream=url,
                  rewriter=Rewriter(elide=arm == "elided", cache="auto", config=SMALL))  # fmt: skip
        await p.start()
        try:
            for body in sent:
                await _post(p, "/v1/responses", json.dumps(body).encode(), CODEX_HEADERS)
            await p.recorder.drain()
        finally:
            await p.stop()
    raw_plain = up.bodies[len(sent) :]
    # Without elision the bytes go as they came: --cache auto leaves an OpenAI request alone.
    assert raw_plain == [json.dumps(b).encode() for b in sent]
    forwarded = [json.loads(b) for b in up.bodies[: len(sent)]]
    ref = re_.Elider(SMALL)
    for client, got in zip(sent, forwarded, strict=True):
        assert got == {**client, "input": ref.apply(client["input"], client["tools"]).messages}
    assert any(_stub_positions(f["input"]) for f in forwarded)
    for a, b in itertools.pairwise(forwarded):
        ra = json.dumps(a["input"], separators=(",", ":"))[:-1]
        rb = json.dumps(b["input"], separators=(",", ":"))
        stride = set(_stub_positions(b["input"])) - set(_stub_positions(a["input"]))
        assert rb.startswith(ra) != bool(stride)
    # What the viewer's `d` says of each request: the cache broke at the strides, nowhere else.
    reasons = [c.reason for c in diffs(forwarded, [None] * len(forwarded))]
    assert reasons.count("stride") == 3 and set(reasons) == {"first", "kept", "stride"}
    table = load_prices(tmp_path / "no-user-prices.json")
    costs = {}
    session = f"cx-{SID}"
    for arm, store in stores.items():
        async with await Reader.open(store) as r:
            _, s, texts = await proxied.load(r, session)
        assert [x.body for x in s] == (forwarded if arm == "elided" else sent)
        costs[arm] = session_cost(s, texts, table, SMALL)
        if arm == "elided":
            assert unelided([x.body for x in s], texts) == sent
    e, pl = costs["elided"], costs["plain"]
    assert e.elided_bodies == forwarded and pl.elided_bodies == forwarded
    assert e.was_elided and not pl.was_elided and e.missing_texts == 0
    assert e.without_elision.cost == pytest.approx(pl.without_elision.cost)
    assert e.without_elision.cost > 0
    assert e.with_elision.breaks == 3 and e.without_elision.breaks == 0  # strides 16, 32, 48
    assert e.unpriced == 0 and all(c is not None and c > 0 for c in e.billed)
    # The stub's id is a stored result of the Codex session: recall gives the text back.
    stub = next(t for m in forwarded[-1]["input"] for _, t, _ in re_.results(m)
                if re_.stub_id(t))  # fmt: skip
    rid = re_.stub_id(stub)
    assert rid is not None
    home = tmp_path / "home"
    out = _ctxview(stores["elided"], "recall", f"#{rid:x}", "--session", session, home=home)
    assert out.returncode == 0, out.stderr
    whole = next(t for m in sent[-1]["input"] for _, t, _ in re_.results(m)
                 if rules.content_id(t) == rid)  # fmt: skip
    assert out.stdout.rstrip("\n") == whole.rstrip("\n")
    # And the commands print it: the cost, and the replay with its breaks.
    req = _ctxview(stores["elided"], "requests", session, home=home)
    assert req.returncode == 0, req.stderr
    assert f"cost ${e.total:,.4f}" in req.stdout and "elided:" in req.stdout
    js = _ctxview(stores["elided"], "stats", "--json", "--set", "elide.threshold_chars=20000",
                  "--set", "elide.min_chars=300", home=home)  # fmt: skip
    assert js.returncode == 0, js.stderr
    [row] = [x for x in json.loads(js.stdout)["sessions"] if x["id"] == session]
    assert row["proxied"]["cost_usd"] == round(e.total, 6)
    assert row["proxied"]["replay_with_elision"]["cache_breaks"] == 3
    assert row["proxied"]["stubs"] == e.stubs > 0


async def test_a_chat_completions_session_is_elided_through_the_proxy(
    tmp_path: Path, upstream: tuple[Upstream, str]
) -> None:
    up, url = upstream
    store = tmp_path / "s.db"
    p = Proxy(store, upstream=url, rewriter=Rewriter(elide=True, config=SMALL))
    await p.start()
    sent = [{"model": "gpt-5", "messages": chat_messages(t)} for t in range(3, 30)]
    try:
        for body in sent:
            await _post(p, "/v1/chat/completions", json.dumps(body).encode(),
                        {"content-type": "application/json"})  # fmt: skip
        await p.recorder.drain()
    finally:
        await p.stop()
    forwarded = [json.loads(b) for b in up.bodies]
    ref = re_.Elider(SMALL)
    for client, got in zip(sent, forwarded, strict=True):
        assert got == {**client, "messages": ref.apply(client["messages"]).messages}
    assert _stub_positions(forwarded[-1]["messages"]) == [
        i for i in _results_at(sent[-1]["messages"]) if i < 48
    ]  # 60 messages: boundary 48
    async with await Reader.open(store) as r:
        [sid] = [row.id for row in await r.sessions() if row.id.startswith("px-")]
        rid = re_.stub_id(forwarded[-1]["messages"][3]["content"][0]["text"])
        assert rid is not None
        body = await r.body(sid, rid)
    assert sid.startswith("px-") and body is not None
    assert body.stored == sent[-1]["messages"][3]["content"][0]["text"]


BELOW = json.dumps(codex_body(3)).encode()
UNREAD: dict[str, tuple[str, bytes]] = {
    "below-threshold": ("/v1/responses", BELOW),
    "not-json": ("/v1/responses", b'{"input": [1, 2'),
    "string-input": ("/v1/responses", b'{"input": "just a prompt", "model": "gpt-5"}'),
    "input-not-a-list": ("/v1/responses", json.dumps({"input": {"role": "user"}}).encode()),
    "not-an-object": ("/v1/responses", json.dumps([codex_body(30)]).encode()),
    "not-utf8": ("/v1/chat/completions", b"\xff\xfe not utf-8"),
    # An entry that is not an object: not a conversation the rule reads.
    "odd-entry": ("/v1/chat/completions",
                  json.dumps({"messages": [*chat_messages(30), 5]}).encode()),
}  # fmt: skip


def test_a_content_encoded_body_is_not_rewritten() -> None:
    raw = json.dumps(codex_body(30)).encode()
    done = Rewriter(elide=True, config=SMALL).rewrite(
        "openai-responses", [("Content-Encoding", "gzip")], raw)  # fmt: skip
    assert done.body is raw and not done.changed and done.note
    assert Rewriter(elide=True, config=SMALL).rewrite("openai-responses", [], raw).changed


@pytest.mark.parametrize("case", UNREAD)
async def test_a_body_the_rule_cannot_read_goes_as_it_came(
    tmp_path: Path, upstream: tuple[Upstream, str], case: str
) -> None:
    path, raw = UNREAD[case]
    up, url = upstream
    rw = Rewriter(elide=True, config=SMALL)
    done = rw.rewrite("openai-chat" if "chat" in path else "openai-responses", [], raw)
    assert done.body is raw and not done.changed and not done.texts
    p = Proxy(tmp_path / "s.db", upstream=url, rewriter=rw)
    await p.start()
    try:
        async with aiohttp.ClientSession() as s, s.post(
            f"http://127.0.0.1:{p.port}/{p.secret}{path}", data=raw,
            headers={"content-type": "application/json"}) as resp:  # fmt: skip
            await resp.read()
        await p.recorder.drain()
    finally:
        await p.stop()
    assert up.bodies == [raw]


def test_a_custom_tool_output_is_a_tool_result_too_named_by_its_call() -> None:
    """Codex's freeform tools (its own `apply_patch`) answer in `custom_tool_call_output`."""
    conv: list[Any] = responses_input(30)
    conv[4:4] = [{"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch",
                  "input": "*** Begin Patch"},
                 {"type": "custom_tool_call_output", "call_id": "call_p",
                  "output": "p" * 5000}]  # fmt: skip
    done = re_.Elider(SMALL).apply(conv)
    assert done.messages[4] == conv[4]
    assert done.messages[5]["output"] == rules.request_stub("p" * 5000, "apply_patch", None, SMALL)
    assert "5,000 chars of apply_patch output" in done.messages[5]["output"]
