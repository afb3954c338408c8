"""Every real session file of Gemini CLI, OpenCode, pi, Copilot CLI, Cursor and aider in
../shared/realdata (SOURCES.md says which are real sessions and which are the publishers'
fixtures) imported: no traceback, no record skipped, and the tool results stored match a count
made here straight from the JSON (a counter of its own, not the importers' parsers). Skipped
when the folder is absent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from realdata import REALDATA, other_agents_files

from ctxview.importers import formats
from ctxview.importers.runner import FileImporter
from ctxview.store import Reader, Writer

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not here"),
]

FILES = other_agents_files()
_FINAL = ("success", "error", "cancelled")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def count_results(fmt: str, path: Path) -> int | None:
    """Tool results in the file by its format's definition (None: aider, whose log has none)."""
    if fmt == formats.PI:
        return sum(r.get("type") == "message" and r["message"].get("role") in (
            "toolResult", "bashExecution") for r in _lines(path))  # fmt: skip
    if fmt == formats.COPILOT:
        return sum(r.get("type") == "tool.execution_complete" for r in _lines(path))
    if fmt == formats.CURSOR:
        return sum(b.get("type") == "tool_result" for r in _lines(path) if r.get("role") == "user"
                   for b in r["message"]["content"] if isinstance(b, dict))  # fmt: skip
    if fmt == formats.GEMINI_JSON:
        return sum(c.get("status") in _FINAL for m in json.loads(path.read_text())["messages"]
                   for c in m.get("toolCalls") or [])  # fmt: skip
    if fmt == formats.GEMINI:
        return len({c["id"] for r in _lines(path) for c in r.get("toolCalls") or []
                    if c.get("status") in _FINAL})  # fmt: skip
    if fmt == formats.OPENCODE_STORAGE:
        return sum(json.loads(p.read_text()).get("state", {}).get("status") in ("completed",
                   "error") for p in path.glob("part/*/*.json"))  # fmt: skip
    return None


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Any]:
    store = tmp_path_factory.mktemp("agents-realdata") / "s.db"
    reports: dict[Path, Any] = {}

    async def go() -> None:
        async with await Writer.open(store) as writer:
            for _, path in FILES:
                reports[path] = await FileImporter(writer, path).step()
        async with await Reader.open(store) as reader:
            rows = await reader.sessions()
            for path, report in reports.items():
                mine = [r for r in rows if r.source_path == str(path.resolve())]
                report.rows = mine
                report.results = sum(r.results for r in mine)

    asyncio.run(go())
    return reports


def test_every_agent_has_real_files() -> None:
    found = {formats.AGENT_OF[fmt] for fmt, _ in FILES}
    assert found == {"gemini-cli", "opencode", "pi", "copilot-cli", "cursor", "aider"}
    assert len(FILES) >= 18


@pytest.mark.parametrize(("fmt", "path"), FILES, ids=lambda v: str(v.relative_to(REALDATA))
                         if isinstance(v, Path) else v)  # fmt: skip
def test_imported_whole(imported: dict[Path, Any], fmt: str, path: Path) -> None:
    report = imported[path]
    assert not report.problems, [str(p) for p in report.problems]
    assert report.rows, f"{path} made no session"
    prefix = formats.PREFIX[formats.AGENT_OF[fmt]]
    assert all(r.id.startswith(prefix + "-") and r.source == formats.AGENT_OF[fmt]
               for r in report.rows)  # fmt: skip
    want = count_results(fmt, path)
    if want is not None:
        assert report.results == want


def test_the_big_ones(imported: dict[Path, Any]) -> None:
    """The sizes SOURCES.md gives: pi's 454 tool calls (448 results, 3 `!` commands, 2
    compactions), Gemini's 188 calls, aider's 1133 sessions (those that say anything)."""
    by_name = {p.name: r for p, r in imported.items()}
    pi = by_name["before-compaction.jsonl"]
    assert pi.results == 451 and len(pi.rows) == 1
    assert by_name["matrix_pro_run4_success.json"].results == 188
    aider = by_name["chat-history.md"]
    assert 900 < len(aider.rows) <= 1134
    copilot = by_name.get("events.jsonl")
    assert copilot is not None


def test_a_second_import_adds_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"

    async def go() -> list[int]:
        async with await Writer.open(db) as writer:
            for _, path in FILES:
                await FileImporter(writer, path).step()
            return [(await FileImporter(writer, path).step()).lines for _, path in FILES]

    assert set(asyncio.run(go())) == {0}
