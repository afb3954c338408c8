"""What Claude Code's model is told (the instructions of `ctxview mcp`, started by Claude Code
2.1.328 beside ctxview's hooks: what the hooks that are on do to its tools), each claim checked
against what the real Claude Code then sends its model (`tests/prompt_checks.py`)."""

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
from prompt_checks import assert_told, normalized

from ctxview.agents.claude_code.hooks import SAVED_PAST, SHOWS_AT_MOST
from ctxview.agents.claude_code.install import HOOKS, active_events
from ctxview.prompts import CLAUDE, Active, claims

pytestmark = [needs_claude, pytest.mark.e2e]

NOTES = "".join(f"line {i} {'beta' if i % 7 == 0 else 'alpha'}\n" for i in range(1, 41))
BIG = "".join(f"{i}\n" for i in range(1, 2501))


def _texts(body: dict[str, Any]) -> list[str]:
    """Every text of a request: its messages' and its system blocks."""
    system = body.get("system")
    blocks = [system] if isinstance(system, str) else [b.get("text", "") for b in system or []]
    return [*blocks, *(t for _, _, t in conversation(body))]


def _id_of(body: dict[str, Any], needle: str) -> str:
    """The id of the tool result holding `needle` in a request."""
    text = next(t for t in tool_results(body).values() if needle in t)
    m = re.search(r"\[(#[0-9a-f]{4})", text)
    assert m, text
    return m[1]


def test_every_claim_claude_code_is_told_is_what_its_model_gets(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        for name, text in {"notes.txt": NOTES, "big.txt": BIG, "empty.txt": "",
                           "a.txt": "one\ntwo\n"}.items():  # fmt: skip
            (p.root / name).write_text(text)
        assert p.ctxview("install", "claude-code").returncode == 0
        notes, big = str(p.root / "notes.txt"), str(p.root / "big.txt")
        agent_prompt = "sub-agent: read a.txt"

        def bash(command: str) -> dict[str, Any]:
            return {"tool": "Bash", "input": {"command": command, "description": "x"}}

        steps: list[Any] = [
            {"tool": "Read", "input": {"file_path": notes}},
            {"tool": "Read", "input": {"file_path": notes, "offset": 3, "limit": 5}},
            {"tool": "Read", "input": {"file_path": big}},
            {"tool": "Read", "input": {"file_path": big, "offset": 2001}},
            {"tool": "Read", "input": {"file_path": str(p.root / "empty.txt")}},
            bash("grep -n beta notes.txt"),
            bash("grep -n beta notes.txt"),
            bash("echo hi"),
            bash("echo hi"),
            bash("seq 1 3400"),
            bash("head -c 20500 /dev/zero | tr '\\0' w; echo; seq 1 450"),  # 451 lines
            bash("head -c 29998 /dev/zero | tr '\\0' w"),
            bash("head -c 50000 /dev/zero | tr '\\0' w"),
            {"tool": "Edit", "input": {"file_path": notes, "old_string": "line 3 alpha",
                                       "new_string": "line 3 gamma"}},
            {"tool": "Write", "input": {"file_path": str(p.root / "new.md"),
                                        "content": "".join(f"{i}\n" for i in range(14))}},
            bash("ls /no-such-dir"),
            {"tool": "Agent", "input": {"description": "look at a", "prompt": agent_prompt,
                                        "subagent_type": "general-purpose"}},
            *once_notified([
                lambda body: {"tool": "mcp__ctxview__recall",
                              "input": {"id": _id_of(body, "lines elided, full output"),
                                        "offset": 2001}},
                {"tool": "mcp__ctxview__recall", "input": {"id": "#ffff"}},
                {"text": "All done."},
            ]),
        ]  # fmt: skip
        sub_agent = [{"tool": "Read", "input": {"file_path": str(p.root / "a.txt")}},
                     {"text": "a.txt says one, two."}]  # fmt: skip
        with FakeAnthropic(steps, threads={agent_prompt: sub_agent}) as api:
            sid = p.claude(api.url, "work on the files")["session_id"]
            mains = [r for r in api.main_requests if agent_prompt not in json.dumps(
                r.get("messages", [])[:3])]  # fmt: skip
        last = mains[-1]
        results = tool_results(last)
        calls = [k for _, k, _ in conversation(last) if k.startswith("tool_use:")]
        order = [k.split(":", 1)[1] for k in calls]
        names = [
            "read",
            "reread",
            "big",
            "big-rest",
            "empty",
            "grep1",
            "grep2",
            "echo1",
            "echo2",
            "seq",
            "wide",
            "edge",
            "saved",
            "edit",
            "new",
            "failed",
            "agent",
            "recall",
            "none",
        ]
        assert len(order) == len(names), [(k, results.get(k, "")[:200]) for k in order]
        got = {n: results[c] for n, c in zip(names, order, strict=True)}
        beside = {n: "\n".join(after_result(last, c)) for n, c in zip(names, order, strict=True)}
        texts = [t for r in mains for t in _texts(r)]

        # Compaction, then the next request.
        with FakeAnthropic([{"text": "Compacted."}]) as api:
            p.claude(api.url, "/compact", "--resume", sid)
        with FakeAnthropic([{"text": "Carrying on."}]) as api:
            p.claude(api.url, "carry on", "--resume", sid)
            after = "\n".join(_texts(api.main_requests[-1]))

        active = Active(CLAUDE, hooks=active_events(p.root, p.home), shows_at_most=SHOWS_AT_MOST,
                        saved_past=SAVED_PAST)  # fmt: skip
        conn = sqlite3.connect(p.store)
        lengths = {
            f"#{rid:x}": n
            for rid, n in conn.execute(
                "SELECT rid, length(stored) FROM bodies WHERE session = ?", (f"cc-{sid}",)
            )
        }
        conn.close()
        assert active.hooks == frozenset(HOOKS)
    stored: dict[str, int] = {}
    told = claims(active=active)
    # The instructions the model got are these claims (Claude Code adds them as the server's).
    said = normalized("\n".join(t for t in texts if "## Tool results in this session" in t))
    assert said and all(normalized(c.text) in said for c in told)
    prefix = re.compile(r"^\d+\t", re.M)

    def ids() -> None:
        for n in ("read", "big", "empty", "grep1", "echo1", "seq", "recall"):
            assert re.match(r"\d+\t\[#[0-9a-f]{4}[ \]]|\[#[0-9a-f]{4}[ \]]", got[n]), got[n]
        for n in ("edit", "new", "failed", "agent"):
            assert re.search(r"hook additional context: \[#[0-9a-f]{4}[ \]]", beside[n]), n

    def reads() -> None:
        assert got["read"].split("\n")[:2] == [got["read"].split("\n")[0], "1\tline 1 alpha"]
        assert got["read"].startswith("0\t[#") and f" {notes} lines 1-40 of 40 sha " in got[
            "read"].split("\n")[0]  # fmt: skip
        head, *lines = got["big"].split("\n")
        assert " lines 1-2000 of 2500 sha " in head and lines[-1] == "2000\t2000"
        assert got["big-rest"].startswith("2000\t[#") and " lines 2001-2500 of 2500 sha " in got[
            "big-rest"].split("\n")[0]  # fmt: skip
        assert re.fullmatch(r"0\t\[#[0-9a-f]{4} \S+ empty sha [0-9a-f]{8}\]", got["empty"])

    def unchanged() -> None:
        assert got["reread"].startswith("2\t[#") and got["reread"].endswith(
            "which already shows lines 1-40.")  # fmt: skip

    def same_search() -> None:
        one = prefix.sub("", got["grep1"])
        assert got["grep2"] == f"[#{int(one[2:6], 16) + 1:x}] Same result as {one[1:6]}."
        assert re.fullmatch(r"\[#[0-9a-f]{4}\]\nhi", got["echo1"])
        assert re.fullmatch(r"\[#[0-9a-f]{4}\]\nhi", got["echo2"]) and got["echo1"] != got["echo2"]

    def cap() -> None:
        assert "\n[3100 lines elided, full output " in got["seq"]
        assert got["wide"].split("\n")[1].endswith(" […cut]")
        # Just under Claude Code's own 30,000 (with the id, over it): capped to fit, so it
        # reaches the model whole rather than as Claude Code's 2 KB preview.
        assert re.match(
            r"\[#[0-9a-f]{4}\]\nw+ \[…cut\]\n\[0 lines elided, full output #", got["edge"]
        )
        assert len(got["edge"]) < 30_000
        assert got["saved"].startswith("<persisted-output>\nOutput too large (48.8KB). Full "
                                       "output saved to: ")  # fmt: skip
        saved = re.search(r"Preview \(first 2KB\):\n\[(#[0-9a-f]{4})\]\nwww", got["saved"])
        assert saved, got["saved"][:600]
        stored[saved[1]] = 30_000  # the id holds Claude Code's first 30,000 characters

    def edits() -> None:
        assert "has been updated successfully" in got["edit"]
        assert f" {notes} sha " in beside["edit"] and "+line 3 gamma" in beside["edit"]
        assert "] Created, 14 lines." in beside["new"]

    def other() -> None:
        assert got["agent"].startswith("Async agent launched")
        assert re.search(r"\[#[0-9a-f]{4}\] is the id of this Agent result\.", beside["agent"])

    def failed() -> None:
        assert got["failed"].startswith("Exit code 2")
        assert re.search(r"\[#[0-9a-f]{4}\] is the id of this failed Bash call's output\.",
                         beside["failed"])  # fmt: skip

    def reports() -> None:
        notified = "\n".join(texts[next(i for i, t in enumerate(texts) if "<task-id>" in t) :])
        assert re.search(r"\[#[0-9a-f]{4}\] is the id of the result in this task notification",
                         notified)  # fmt: skip

    def summary() -> None:
        assert "## Files read before this summary" in after
        assert f"| {big} | 2001-2500 of 2500 |" in after

    def recall() -> None:
        assert re.match(r"\[#[0-9a-f]{4} recall #[0-9a-f]{4} lines 2001-3400 of 3400\]\n2001\n",
                        got["recall"])  # fmt: skip
        assert got["none"].endswith("No stored result #ffff in this session.")

    def stored_as_said() -> None:
        assert all(lengths[k] == n for k, n in stored.items()), (stored, lengths)

    checks = {"ids": ids, "reads": reads, "unchanged": unchanged, "same-search": same_search,
              "cap": cap, "edits": edits, "beside": other, "failed": failed, "reports": reports,
              "summary": summary, "recall": recall}  # fmt: skip
    assert_told(told, checks, [*got.values(), *beside.values(), after, *texts])
    stored_as_said()
