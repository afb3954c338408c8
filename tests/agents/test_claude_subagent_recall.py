"""A sub-agent's recall with the real Claude Code (2.1.328): a sub-agent and its parent share one
id space, so the id in the sub-agent's elision line brings back the sub-agent's own output, a
parent's id its parent's result, and no id the model sees anywhere in the session names two
results. The recalls are the sub-agent's own (its session), and `ctxview recall` finds both
from the top session."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import conversation, needs_claude, project, tool_results
from fake_anthropic import FakeAnthropic

pytestmark = [needs_claude, pytest.mark.e2e]

PROMPT = "sub-agent: count to a thousand"
ELIDED = re.compile(r"lines elided, full output (#[0-9a-f]+)\]")


def _recall_elided(body: dict[str, Any]) -> dict[str, Any]:
    """The sub-agent recalls the id its own elision line named (known only once it got it)."""
    seq = next(t for k, t in tool_results(body).items() if k.endswith("_Bash"))
    found = ELIDED.search(seq)
    assert found, seq[:300]
    return {"tool": "mcp__ctxview__recall", "input": {"id": found.group(1)}}


def test_a_sub_agent_recalls_its_own_elided_output_and_its_parents_result(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        assert p.ctxview("install", "claude-code").returncode == 0
        steps = [
            {"tool": "Bash", "input": {"command": "echo parent-says-hi", "description": "p"}},
            {"tool": "Agent", "input": {"description": "count", "prompt": PROMPT,
                                        "subagent_type": "general-purpose"}},
            {"text": "Done."},
        ]  # fmt: skip
        sub_agent = [
            {"tool": "Bash", "input": {"command": "seq 1 1000", "description": "count"}},
            _recall_elided,
            {"tool": "mcp__ctxview__recall", "input": {"id": "#1000"}},  # the parent's echo
            {"text": "Counted."},
        ]
        with FakeAnthropic(steps, threads={PROMPT: sub_agent}) as api:
            result = p.claude(api.url, "use an agent")
            requests = list(api.requests)
        sid = f"cc-{result['session_id']}"
        sub = [r for r in requests if r.get("tools") and PROMPT in str(r["messages"][:1])]
        last = sub[-1]
        got = tool_results(last)
        seq_call = next(k for k in got if k.endswith("_Bash"))
        own, parents = sorted(k for k in got if k.endswith("_recall"))
        elided = ELIDED.search(got[seq_call])
        assert elided is not None
        rid = elided.group(1)
        # The sub-agent's elided output, in full, under the id it was given.
        lines = "\n".join(str(i) for i in range(1, 1001))
        assert re.fullmatch(rf"\[#[0-9a-f]+ recall {rid} lines 1-1000 of 1000\]\n{lines}",
                            got[own]), got[own][:200]  # fmt: skip
        # The parent's result, under the id the parent was given.
        assert re.fullmatch(r"\[#[0-9a-f]+ recall #1000 lines 1-1 of 1\]\nparent-says-hi",
                            got[parents]), got[parents]  # fmt: skip

        # No id the model saw names two results: every bracket's own id, in every request of
        # the parent and the sub-agent, is one result of one session.
        seen: dict[str, str] = {}
        for body in requests:
            for _, kind, text in conversation(body):
                for m in re.finditer(r"\[(#[0-9a-f]{4,})[ \]]", text):
                    if kind.startswith("tool_result:"):
                        seen.setdefault(m.group(1), kind)
                        assert seen[m.group(1)] == kind, (m.group(1), seen[m.group(1)], kind)
        conn = sqlite3.connect(p.store)
        rows = conn.execute("SELECT session, rid, tool, rkind, points_to FROM events "
                            "WHERE kind = 'result' ORDER BY rid").fetchall()  # fmt: skip
        parent_of = dict(conn.execute("SELECT id, parent_session FROM sessions").fetchall())
        conn.close()
        rids = [r[1] for r in rows]
        assert len(rids) == len(set(rids)), rows  # one id space for the tree
        agent = next(k for k, v in parent_of.items() if v == sid)
        by_rid = {f"#{r[1]:04x}": r for r in rows}
        assert by_rid[rid][:3] == (agent, int(rid[1:], 16), "bash")
        assert by_rid["#1000"][:3] == (sid, 0x1000, "bash")
        # The recalls are the sub-agent's, pointing at what they brought back; its transcript's
        # import added no second copy of them.
        recalls = [r for r in rows if r[3] == "recall"]
        assert [(r[0], r[4]) for r in recalls] == [(agent, int(rid[1:], 16)), (agent, 0x1000)]
        assert [r[2] for r in rows if r[0] == agent] == ["bash", "recall", "recall"]

        # `ctxview recall` from the top session finds the sub-agent's id.
        done = p.ctxview("recall", rid)
        assert done.returncode == 0, done.stderr
        assert done.stdout == lines + "\n"
        done = p.ctxview("recall", "--session", agent, "#1000")
        assert (done.returncode, done.stdout) == (0, "parent-says-hi\n")
