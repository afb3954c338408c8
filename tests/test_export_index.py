"""`ctxview export --all`: the index (HTML and Markdown) has the session list's facts, column for
column: title, started, results, state, saved, source (with a pulled session's machine) and
workspace; a session that never ended but has no writer is 'ended', as the list says."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ctxview.cli import main
from ctxview.store import Reader, Writer
from ctxview.store.records import Body, Event
from ctxview.viewer.screens.sessions import COLUMNS, row_view


class Rows(HTMLParser):
    """The text of each table row's cells."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


async def _session(writer: Writer, sid: str, workspace: str, **kw: str) -> None:
    await writer.create_session(sid, title=f"title of {sid}", workspace=workspace,
                                next_rid=0x1000, **kw)  # fmt: skip
    ev = Event(ts=1.0e9, kind="result", tool="read", rid=0x1000, rkind="full", shown_chars=5,
               stored_chars=5, shown_lines=1)  # fmt: skip
    await writer.append(sid, [ev], [Body(0x1000, "hello", "hello")])


@pytest.fixture
async def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    async with await Writer.open(path) as writer:
        await _session(writer, "s-ended", "/srv/work/alpha", source="claude-code")
        await writer.update_session("s-ended", ended=1.0e9 + 100)
        await _session(writer, "s-pulled", "/srv/work/beta", source="codex",
                       data=json.dumps({"machine": "laptop-7"}))  # fmt: skip
        await writer.update_session("s-pulled", ended=1.0e9 + 200)
        # Never ended; its writer (this one) closes below: not live, as after an import.
        await _session(writer, "s-left", "/srv/work/gamma", source="claude-code")
    return path


async def test_the_index_has_the_session_lists_facts(store: Path, tmp_path: Path) -> None:
    reader = await Reader.open(store)
    try:
        listed = {r.id: r for r in await reader.sessions()}
    finally:
        await reader.close()
    keys = [c[0] for c in COLUMNS]
    viewer = {sid: dict(zip(keys, row_view(r, 0).cells, strict=True)) for sid, r in listed.items()}
    assert viewer["s-pulled"]["source"] == "codex@laptop-7"
    assert viewer["s-left"]["state"] == "ended"

    assert main(["--store", str(store), "export", "--all", "-o", str(tmp_path / "h")]) == 0
    head, *rows = Rows((tmp_path / "h" / "index.html").read_text()).rows
    assert head == ["session", "started", "state", "results", "saved", "title", "source",
                    "workspace"]  # fmt: skip
    html = {r[0]: dict(zip(head, r, strict=True)) for r in rows}
    assert sorted(html) == sorted(listed)

    assert main(["--store", str(store), "export", "--all", "--format", "md", "-o",
                 str(tmp_path / "m")]) == 0  # fmt: skip
    lines = (tmp_path / "m" / "index.md").read_text().splitlines()
    table = [ln for ln in lines if ln.startswith("| ")]
    md_head = [c.strip() for c in table[0].strip("|").split("|")]
    assert md_head == head
    md = {}
    for ln in table[1:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        md[re.sub(r"\[`(.*?)`\].*", r"\1", cells[0])] = dict(zip(head, cells, strict=True))
    assert sorted(md) == sorted(listed)

    for sid, shown in viewer.items():
        for index in (html[sid], md[sid]):
            assert index["title"] == shown["title"], sid
            assert index["state"] == shown["state"], sid
            assert index["source"] == shown["source"], sid
            assert index["workspace"] == shown["workspace"] == listed[sid].workspace, sid
            assert index["results"] == shown["results"] == "1", sid
