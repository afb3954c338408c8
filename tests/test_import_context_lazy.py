"""Inside an import's batch a session's context state is not kept in step when nothing it decides
is written (no elision, no compaction threshold); asked for afterwards, it is rebuilt from the
store and is the context a session fed event by event has."""

from __future__ import annotations

from pathlib import Path

from ctxview.context.state import ContextState
from ctxview.importers.runner import FileImporter
from ctxview.rules.config import Config
from ctxview.store import Writer

FIXTURES = Path(__file__).parent / "fixtures" / "import"


async def _context_after_import(store: Path, path: Path, *, batch: bool) -> tuple[str, list, bool]:
    writer = await Writer.open(store)
    try:
        importer = FileImporter(writer, path)
        if batch:
            async with writer.batch():
                await importer.step()
        else:
            await importer.step()
        assert importer.hub is not None
        session = importer.hub.main.session
        return await session.context_text(), await session.context(), session.compact_due
    finally:
        await writer.close()


async def test_context_rebuilt_after_a_batch_is_the_one_fed_live(tmp_path: Path) -> None:
    for name in ("claude_session.jsonl", "claude_inline_sidechain.jsonl", "codex_rollout.jsonl"):
        path = FIXTURES / name
        batched = await _context_after_import(tmp_path / f"b-{name}.db", path, batch=True)
        live = await _context_after_import(tmp_path / f"l-{name}.db", path, batch=False)
        assert batched == live, name
        assert batched[0], name  # the fixtures have a context to compare


def test_only_a_state_that_adds_no_event_is_inert() -> None:
    assert ContextState(Config(None)).inert
    assert not ContextState(Config({"elide.enabled": True})).inert
    assert not ContextState(Config({"compaction.above_tokens": 1000})).inert


async def test_context_of_a_session_resumed_inside_a_batch(tmp_path: Path) -> None:
    """A file imported in two goes (the second resumes the session inside its batch) has the
    context of the same file imported at once, event by event."""
    lines = (FIXTURES / "claude_session.jsonl").read_bytes().splitlines(keepends=True)
    grown = tmp_path / "grown.jsonl"
    grown.write_bytes(b"".join(lines[: len(lines) // 2]))
    store = tmp_path / "two-goes.db"
    writer = await Writer.open(store)
    try:
        async with writer.batch():
            await FileImporter(writer, grown).step()
    finally:
        await writer.close()
    grown.write_bytes(b"".join(lines))
    resumed = await _context_after_import(store, grown, batch=True)
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    live = await _context_after_import(tmp_path / "live.db", whole, batch=False)
    assert resumed == live
