"""A sub-agent under the hook (Claude Code 2.1.328 runs Agent asynchronously): its tools are
shaped in its own session `cc-<agent_id>`, linked to the Agent call of its parent, and the
Agent call's own output (metadata, a shape the hook cannot rewrite) gets its id beside it."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from claude_helpers import (
    after_result,
    conversation,
    needs_claude,
    once_notified,
    project,
    tool_results,
)
from fake_anthropic import FakeAnthropic

pytestmark = [needs_claude, pytest.mark.e2e]


def test_a_sub_agents_results_land_in_its_own_linked_session(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        (p.root / "a.txt").write_text("one\ntwo\n")
        assert p.ctxview("install", "claude-code").returncode == 0
        prompt = "sub-agent: read a.txt"
        steps = [
            {
                "tool": "Agent",
                "input": {
                    "description": "look at a",
                    "prompt": prompt,
                    "subagent_type": "general-purpose",
                },
            },
            {"text": "Done."},
        ]
        sub_agent = [  # its own conversation, run beside the main one
            {"tool": "Read", "input": {"file_path": str(p.root / "a.txt")}},
            {"text": "a.txt says one, two."},
        ]
        with FakeAnthropic(steps, threads={prompt: sub_agent}) as api:
            result = p.claude(api.url, "use an agent")
            requests = api.main_requests
        sid = result["session_id"]
        # The sub-agent's read and the Agent call's output share one id counter (the call's
        # hook, as Claude Code launches the agent, comes first).
        sub = next(r for r in requests if "toolu_0002_Read" in tool_results(r))
        assert tool_results(sub)["toolu_0002_Read"].startswith(
            f"0\t[#1001 {p.root / 'a.txt'} lines 1-2 of 2 sha ")  # fmt: skip
        main = next(r for r in requests if "toolu_0001_Agent" in tool_results(r))
        beside = "\n".join(after_result(main, "toolu_0001_Agent"))
        assert "PostToolUse:Agent hook additional context: [#1000] is the id of this Agent " \
            "result." in beside  # fmt: skip
        conn = sqlite3.connect(p.store)
        rows = dict(conn.execute("SELECT id, parent_session FROM sessions").fetchall())
        agent = next(k for k in rows if k != f"cc-{sid}")
        assert rows == {f"cc-{sid}": None, agent: f"cc-{sid}"}
        (call,) = conn.execute("SELECT parent_call FROM sessions WHERE id = ?", (agent,)).fetchone()
        assert call == "toolu_0001_Agent"
        assert conn.execute("SELECT tool, rid FROM events WHERE session = ? AND kind = 'result'",
                            (agent,)).fetchall() == [("read", 0x1001)]  # fmt: skip


NOTE_ID = re.compile(r"\[(#[0-9a-f]+)\] is the id of the result in this task notification\.")


def test_a_background_sub_agents_report_gets_its_id_and_recall_brings_it_back(
    tmp_path: Path,
) -> None:
    """Claude Code runs an Agent call in the background by default (`run_in_background`): the
    call answers "Async agent launched" at once, and the report comes later as a
    `<task-notification>` prompt that no PostToolUse sees. The UserPromptSubmit hook stores it
    under an id and gives the model the id; a recall of that id brings the report back."""
    with project(tmp_path) as p:
        (p.root / "a.txt").write_text("one\ntwo\n")
        assert p.ctxview("install", "claude-code").returncode == 0
        prompt = "sub-agent: read a.txt"
        told: list[str] = []

        def recall_the_report(body: dict[str, Any]) -> dict[str, Any]:
            texts = "\n".join(t for _, _, t in conversation(body))
            told.extend(NOTE_ID.findall(texts))
            return {"tool": "mcp__ctxview__recall", "input": {"id": told[-1] if told else "?"}}

        steps = [
            {"tool": "Agent", "input": {"description": "look at a", "prompt": prompt,
                                        "subagent_type": "general-purpose"}},
            *once_notified([recall_the_report, {"text": "Done."}]),
        ]  # fmt: skip
        sub_agent = [
            {"tool": "Read", "input": {"file_path": str(p.root / "a.txt")}},
            {"text": "a.txt says one, two."},
        ]
        with FakeAnthropic(steps, threads={prompt: sub_agent}) as api:
            sid = p.claude(api.url, "use an agent")["session_id"]
            requests = api.main_requests
        launched = next(tool_results(r)["toolu_0001_Agent"] for r in requests
                        if "toolu_0001_Agent" in tool_results(r))  # fmt: skip
        assert launched.startswith("Async agent launched")  # in the background indeed
        # The notification, and the id beside it, as the prompt's hook context.
        notified = next(r for r in requests
                        if any("<task-id>" in t for _, _, t in conversation(r)))  # fmt: skip
        texts = [t for _, _, t in conversation(notified)]
        at = next(i for i, t in enumerate(texts) if "<task-id>" in t)
        assert "<result>a.txt says one, two.</result>" in texts[at]
        assert told, texts[at:]
        assert any(NOTE_ID.search(t) for t in texts[at:]), texts[at:]
        # The recall of that id: the report, in full.
        recalled = next(tool_results(r) for r in requests if any("recall" in k for k in
                                                                  tool_results(r)))  # fmt: skip
        answer = next(v for k, v in recalled.items() if "recall" in k)
        assert re.fullmatch(rf"\[#[0-9a-f]+ recall {told[-1]} lines 1-1 of 1\]\n"
                            r"a\.txt says one, two\.", answer), answer  # fmt: skip

        # The store: the report is a result of the parent session, under Claude Code's prompt
        # id, and an import of the transcript adds no second one.
        conn = sqlite3.connect(p.store)
        rows = conn.execute("SELECT e.tool, e.call_ref, b.stored FROM events e JOIN bodies b ON "
                            "b.session = e.session AND b.rid = e.rid WHERE e.session = ? AND "
                            "e.tool = 'task-notification'", (f"cc-{sid}",)).fetchall()  # fmt: skip
        conn.close()
        assert [(t, s) for t, _, s in rows] == [("task-notification", "a.txt says one, two.")]
        transcript = next((p.home / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
        record = next(json.loads(line) for line in transcript.read_text().splitlines()
                      if "<task-notification>" in line and '"type":"user"' in line)  # fmt: skip
        assert rows[0][1] == f"task-notification:{record['promptId']}"
        assert p.ctxview("import", str(transcript)).returncode == 0
        conn = sqlite3.connect(p.store)
        (n,) = conn.execute("SELECT count(*) FROM events WHERE tool = 'task-notification' AND "
                            "kind = 'result'").fetchone()  # fmt: skip
        conn.close()
        assert n == 1

        # The transcript alone (imported where no hook ran): the replay gives the report its id
        # the same way, so the viewer and `stats` show it either way.
        other = tmp_path / "other.db"
        assert p.ctxview("--store", str(other), "import", str(transcript)).returncode == 0
        conn = sqlite3.connect(other)
        replayed = conn.execute("SELECT e.call_ref, b.stored, b.shown FROM events e JOIN bodies b"
                                " ON b.session = e.session AND b.rid = e.rid WHERE e.session = ?"
                                " AND e.tool = 'task-notification'",
                                (f"cc-{sid}",)).fetchall()  # fmt: skip
        conn.close()
        assert [(r, s) for r, s, _ in replayed] == [(rows[0][1], "a.txt says one, two.")]
        assert NOTE_ID.fullmatch(replayed[0][2])
