"""Each exported file says exactly what it holds of redactions (issue 16 §3.4): the redaction
markers counted in every file written (an HTML page as a reader sees it, a Markdown file, a
JSON Lines file, an index) are what that file states, by kind, for one session, a session in
pages and --all, in every format. --all once wrote running totals (a page said 8 secrets where
it held none) and the redactor's own count (61 where the file held 45)."""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from export_fixture import MAIN, build
from export_secrets import SECRETS

from ctxview.cli import main
from ctxview.export.tally import tally_file
from ctxview.store import Writer
from ctxview.store.records import Body, Event

STATED = re.compile(r"(?:this page|this index|this file) holds (?:no redacted secrets|"
                    r"(\d+) redacted secrets?: ([^.;<]*))")  # fmt: skip


def stated(text: str) -> Counter[str]:
    """What a file says it holds (its first statement: an index goes on to its pages)."""
    m = STATED.search(text)
    assert m, "the file says nothing of what it holds"
    counts: Counter[str] = Counter()
    if m.group(1):
        for part in m.group(2).split(", "):
            n, kind = part.split(" ", 1)
            counts[kind] = int(n)
        assert sum(counts.values()) == int(m.group(1))
    return counts


def held(path: Path) -> tuple[Counter[str], Counter[str]]:
    """(the markers the file holds, what it states)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".jsonl", ".json"):
        if path.suffix == ".jsonl":
            lines = text.strip().split("\n")
            end = json.loads(lines[-1])
            assert end["type"] == "end"
            return tally_file("\n".join(lines[:-1])), Counter(end["redactions"])
        index = json.loads(text)
        body = json.dumps(index["sessions"], ensure_ascii=False)
        return tally_file(body), Counter(index["redactions"])
    if path.suffix == ".html":
        seen = html.unescape(re.sub(r"<[^>]+>", "", text))  # what a reader sees
        return tally_file(seen), stated(seen)
    return tally_file(text), stated(text)


async def _more(path: Path) -> None:
    """Two more sessions beside the fixture's: one with no secret, one with a single key."""
    w = await Writer.open(path)
    for sid, text in (("sess-clean", "nothing secret here"),
                      ("sess-one", f"the key {SECRETS[2][1]} again")):  # fmt: skip
        await w.create_session(sid, title=sid, next_rid=0x1000, started=1_764_100_000.0)
        shown = f"[#1000]\n{text}"
        await w.append(sid, [
            Event(ts=1.0, kind="call", tool="bash", call_ref="c", args='{"command": "x"}'),
            Event(ts=1.0, kind="result", tool="bash", call_ref="c", rid=0x1000, rkind="full",
                  shown_chars=len(shown), shown_lines=2, stored_chars=len(text), stored_lines=1),
        ], [Body(0x1000, shown, text)])  # fmt: skip
    await w.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("counts") / "store.db"
    asyncio.run(build(path))
    asyncio.run(_more(path))
    return path


CASES = [(fmt, how) for fmt in ("html", "md", "json") for how in ("one", "paged", "all")
         if not (how == "paged" and fmt != "html")]  # fmt: skip


@pytest.mark.parametrize(("fmt", "how"), CASES, ids=[f"{f}-{h}" for f, h in CASES])
def test_each_file_states_what_it_holds(store: Path, tmp_path: Path, fmt: str, how: str) -> None:
    ext = {"html": "html", "md": "md", "json": "jsonl"}[fmt]
    args = ["--store", str(store), "export", "--format", fmt]
    if how == "all":
        args += ["--all", "-o", str(tmp_path / "all")]
    else:
        args += [MAIN, "-o", str(tmp_path / f"s.{ext}")]
        if how == "paged":
            args += ["--page-mb", "0.03"]
    assert main(args) == 0
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    if how == "paged":
        assert len(files) >= 3, files  # an index and pages
    if how == "all":
        assert len(files) == 4, files  # three sessions and the index
    total: Counter[str] = Counter()
    for path in files:
        markers, says = held(path)
        assert markers == says, f"{path.name} holds {dict(markers)} but says {dict(says)}"
        total += markers
    assert total["github-token"] >= 2 and len(total) >= 20, total  # the planted ones are there
    if how == "all":
        clean = next(p for p in files if p.name.startswith("sess-clean"))
        assert held(clean) == (Counter(), Counter())  # no running total from the sessions before
