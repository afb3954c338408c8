"""The real Claude Code through `ctxview run --elide`: a scripted session pushed past the
threshold (180,000 characters) gets its stubs exactly where the rules put them, at whole
strides of 16 messages, and consecutive requests send a byte-identical prefix except at a
stride; every elided text is in the store under the id its stub names."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from claude_helpers import CLAUDE, CTXVIEW, Project, needs_claude
from fake_anthropic import FakeAnthropic

from ctxview.context import request_elide as re_
from ctxview.context.request_cost import stub_ids, unelided
from ctxview.rules.config import Config

pytestmark = needs_claude

TURNS = 30


def _strip(value: Any) -> Any:
    """Claude Code moves its cache marker to the newest message each turn, sending that one's
    content as a block list to carry it, a string once it has moved: neither is content (the
    API renders both alike)."""
    if isinstance(value, dict):
        out = {k: _strip(v) for k, v in value.items() if k != "cache_control"}
        if "role" in out and isinstance(out.get("content"), str):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def test_claude_code_elided_at_the_strides(tmp_path: Path) -> None:
    p = Project(tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db")
    p.root.mkdir()
    p.home.mkdir()
    for i in range(TURNS):
        (p.root / f"big{i}.txt").write_text("\n".join(f"{i:02d} line {j} " + "z" * 60
                                                      for j in range(160)))  # fmt: skip
    steps: list[Any] = [{"tool": "Bash", "input": {"command": f"cat big{i}.txt",
                                                   "description": "cat"}}
                        for i in range(TURNS)]  # fmt: skip
    steps.append({"text": "All read."})
    with FakeAnthropic(steps) as server:
        done = subprocess.run(
            [str(CTXVIEW), "run", "--elide", "--upstream", server.url, "--", str(CLAUDE), "-p",
             "read every big file", "--output-format", "json", "--allowedTools", "Bash"],
            cwd=p.root, env=p.env("http://127.0.0.1:9/not-used"), capture_output=True,
            text=True, timeout=400,
        )  # fmt: skip
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        main = server.main_requests
    assert len(main) == TURNS + 1
    sid = json.loads(done.stdout)["session_id"]
    conn = sqlite3.connect(p.store)
    ids = stub_ids(main)
    texts = {int(r): t for r, t in conn.execute(
        "SELECT rid, CAST(stored AS TEXT) FROM bodies WHERE session = ?", (f"cc-{sid}",))
        if int(r) in ids}  # fmt: skip
    assert ids and set(texts) == set(ids)  # every stub's text is stored under its id
    # What Claude Code sent, the stubs' texts put back; the rules over it give what went up.
    client = unelided(main, texts)
    elider = re_.Elider(Config())
    boundaries = []
    for sent, got in zip(client, main, strict=True):
        applied = elider.apply(sent["messages"], sent.get("tools"))
        assert got["messages"] == applied.messages
        boundaries.append(applied.boundary)
        for i, m in enumerate(got["messages"]):
            if re_.message_is_elided(m):
                assert i < applied.boundary
    assert any(b >= 32 for b in boundaries)  # at least two strides
    assert all(b % 16 == 0 for b in boundaries)
    # The threshold on the client's own messages: nothing elided before they pass 180,000.
    sizes = [re_.messages_size(c["messages"]) for c in client]
    assert sizes == sorted(sizes) and sizes[-1] > 180_000
    for size, got in zip(sizes, main, strict=True):
        if size <= 180_000:
            assert not stub_ids([got])
    # Consecutive requests: the prefix byte-identical, except at a stride.
    for (a, ba), (b, bb) in itertools.pairwise(zip(main, boundaries, strict=True)):
        prefix = json.dumps(_strip(a["messages"]))[:-1]
        same = json.dumps(_strip(b["messages"])).startswith(prefix)
        newly = {i for i, m in enumerate(b["messages"]) if re_.message_is_elided(m)} - {
            i for i, m in enumerate(a["messages"]) if re_.message_is_elided(m)}  # fmt: skip
        assert same == (not newly), (ba, bb)
        assert not newly or bb > ba
    # The stub tells the model how to get the text back through its shell (no MCP here).
    stub = next(t for m in main[-1]["messages"] for blk in (m["content"] if isinstance(
        m["content"], list) else []) if (t := re_.block_text(blk)) and re_.stub_id(t))  # fmt: skip
    rid = re_.stub_id(stub)
    assert rid is not None
    # The id bare: typed into a shell, `#…` would be a comment.
    assert stub.endswith(f"run `ctxview recall {rid:x}` to see it]")
    out = p.ctxview("recall", f"#{rid:x}", "--session", f"cc-{sid}")
    assert out.returncode == 0 and out.stdout.rstrip("\n") == texts[rid].rstrip("\n")
