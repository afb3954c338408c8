"""Every real transcript of ../shared/realdata imported: no crash, and the counts of messages, tool
calls, results, compactions and usage match counts made here independently, straight from the
JSON (a small counter of its own, not the importer's parser). Skipped when the folder is absent."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from realdata import REALDATA, imported_transcripts

from ctxview.importers.detect import CLAUDE, detect
from ctxview.importers.runner import import_file
from ctxview.store import Reader, Writer
from ctxview.store.records import Event, SessionRow

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not here"),
]


transcripts = imported_transcripts


def records(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def count_claude(path: Path) -> dict[str, Any]:
    """What the file holds, by the FORMATS.md definitions: user turns (a string, or blocks other
    than tool results), one assistant message per message.id, system records other than
    compaction boundaries, tool results, compaction boundaries, usage at its largest per id."""
    c: dict[str, Any] = defaultdict(int)
    usage: dict[str, dict[str, int]] = {}
    ids: set[str] = set()
    for r in records(path):
        kind = r.get("type")
        if kind == "user":
            content = r["message"]["content"]
            if r.get("isCompactSummary"):
                continue
            if isinstance(content, str) or any(b.get("type") != "tool_result" for b in content):
                c["user"] += 1
            if isinstance(content, list):
                c["results"] += sum(b.get("type") == "tool_result" for b in content)
        elif kind == "assistant":
            m = r["message"]
            ids.add(m["id"])
            if m.get("model") != "<synthetic>" and isinstance(m.get("usage"), dict):
                u = usage.setdefault(m["id"], {"out": 0, "read": 0})
                u["out"] = max(u["out"], m["usage"].get("output_tokens", 0))
                u["read"] = max(u["read"], m["usage"].get("cache_read_input_tokens", 0))
        elif kind == "system":
            if r.get("subtype") == "compact_boundary":
                c["compactions"] += 1
            else:
                c["system"] += 1
    c["assistant_ids"] = len(ids)
    c["output_tokens"] = sum(u["out"] for u in usage.values())
    c["cache_read_tokens"] = sum(u["read"] for u in usage.values())
    return c


def count_codex(path: Path) -> dict[str, Any]:
    c: dict[str, Any] = defaultdict(int)
    last_total = None
    for r in records(path):
        p = r.get("payload", r)
        if r.get("type") == "event_msg" and p.get("type") == "user_message":
            c["user"] += 1
        elif p.get("type") in ("function_call_output", "custom_tool_call_output"):
            c["results"] += 1
        elif r.get("type") == "compacted":
            c["compactions"] += 1
        elif p.get("type") == "token_count" and isinstance(p.get("info"), dict):
            total = p["info"]["total_token_usage"]
            if total != last_total:
                last_total = total
                c["output_tokens"] += p["info"]["last_token_usage"]["output_tokens"]
                c["cache_read_tokens"] += p["info"]["last_token_usage"]["cached_input_tokens"]
    return c


def count_events(events: list[Event]) -> dict[str, Any]:
    c: dict[str, Any] = defaultdict(int)
    ids: set[str] = set()
    for e in events:
        if e.kind == "message":
            c[e.role or "?"] += 1
            usage = e.extra.get("usage") or {}
            c["output_tokens"] += usage.get("output_tokens", 0)
            c["cache_read_tokens"] += usage.get("cache_read_tokens", 0)
            if e.role == "assistant" and "message_id" in e.extra:
                ids.add(e.extra["message_id"])
        elif e.kind in ("call", "result", "compaction"):
            c[e.kind + "s"] += 1
    c["assistant_ids"] = len(ids)
    return c


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    path = tmp_path_factory.mktemp("realdata") / "store.db"

    async def run() -> None:
        writer = await Writer.open(path)
        try:
            async with writer.batch():
                for f in transcripts():
                    report = await import_file(writer, f)
                    assert not report.problems, [str(p) for p in report.problems]
        finally:
            await writer.close()

    asyncio.run(run())
    return path


async def sessions_of(store: Path, path: Path) -> list[tuple[SessionRow, list[Event]]]:
    async with await Reader.open(store) as reader:
        rows = [r for r in await reader.sessions() if r.source_path == str(path.resolve())]
        return [(r, await reader.events(r.id)) for r in rows]


@pytest.mark.parametrize("path", transcripts(), ids=lambda p: str(p.relative_to(REALDATA)))
async def test_counts_match(store: Path, path: Path) -> None:
    got: dict[str, Any] = defaultdict(int)
    found = await sessions_of(store, path)
    assert found, f"{path} made no session"
    for _, events in found:
        for k, v in count_events(events).items():
            got[k] += v
    if detect(path) == CLAUDE:
        want = count_claude(path)
        assert got["assistant_ids"] == want["assistant_ids"]
        assert got["system"] == want["system"]
    else:
        want = count_codex(path)
    assert got["user"] == want["user"]
    # Every tool result is one call and one result, paired.
    assert got["results"] == want["results"] and got["calls"] == want["results"]
    assert got["compactions"] == want["compactions"]
    # Usage counted once per message (Claude) / per model call (Codex).
    assert got["output_tokens"] == want["output_tokens"]
    assert got["cache_read_tokens"] == want["cache_read_tokens"]


async def test_every_compaction_boundary_appears(store: Path) -> None:
    seen = 0
    for path in transcripts():
        boundaries = [r for r in records(path) if r.get("subtype") == "compact_boundary"]
        if not boundaries:
            continue
        comps = [
            e for _, evs in await sessions_of(store, path) for e in evs if e.kind == "compaction"
        ]
        assert len(comps) == len(boundaries)
        for comp, b in zip(comps, boundaries, strict=True):
            assert comp.text.startswith("This session is being continued")
            assert comp.extra["preTokens"] == b["compactMetadata"]["preTokens"]
            assert "rows" in comp.extra
        seen += 1
    assert seen == 2  # the two entireio-cli files


async def test_sub_agents_link_back(store: Path) -> None:
    """Agent files and inline sidechains are sessions of their own whose parent call is the
    Task/Agent call that started them (found here from the parent's JSON)."""
    links: dict[str, str] = {}  # agentId -> tool_use id, from every parent's Task results
    prompts: dict[str, str] = {}  # Task tool_use id -> prompt (inline sidechains)
    for path in transcripts():
        for r in records(path):
            tur = r.get("toolUseResult")
            if isinstance(tur, dict) and isinstance(tur.get("agentId"), str):
                links[tur["agentId"]] = r["message"]["content"][0]["tool_use_id"]
            if r.get("type") == "assistant":
                for b in r["message"]["content"]:
                    if b.get("type") == "tool_use" and b["name"] in ("Task", "Agent"):
                        prompts[b["id"]] = b["input"].get("prompt")
    async with await Reader.open(store) as reader:
        rows = {r.id: r for r in await reader.sessions()}
    agent_files = [p for p in transcripts() if p.name.startswith("agent-")]
    linked = 0
    for path in agent_files:
        agent_id = path.stem[len("agent-") :]
        row = rows[f"cc-{agent_id}"]
        assert row.parent_session is not None and row.parent_session in rows
        if agent_id in links:
            assert row.parent_call == links[agent_id]
            linked += 1
    assert linked == 3  # ea02459f, a2271d1, a4ca7529859c158c2 (the Warmup agent has no Task)
    inline = [r for r in rows.values() if r.id.startswith("cc-sc-")]
    assert len(inline) == 5  # claude-code-viewer's five parallel Task calls
    for row in inline:
        assert row.parent_call in prompts
        async with await Reader.open(store) as reader:
            first = (await reader.events(row.id, limit=1))[0]
        assert first.role == "user" and first.text == prompts[row.parent_call]


async def test_reimport_adds_nothing(store: Path) -> None:
    writer = await Writer.open(store)
    try:
        async with writer.batch():
            for f in transcripts():
                assert (await import_file(writer, f)).lines == 0
    finally:
        await writer.close()
