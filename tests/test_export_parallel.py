"""A long HTML export is written by two processes (the first half of the pages and the rest):
every page, the index and the redaction counts are the bytes one process writes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ctxview.export.plan import build
from ctxview.export.redact import Redactor
from ctxview.export.source import Source
from ctxview.store.records import Body, Event
from ctxview.store.writer import Writer

sys.path.insert(0, str(Path(__file__).parent))
from export_secrets import SECRETS

SID = "sess-long"


async def _build(path: Path) -> None:
    w = await Writer.open(path)
    await w.create_session(SID, title="a long session", workspace="/work/long", next_rid=0x1000,
                           started=1_764_000_000.0)  # fmt: skip
    t, rid = 1_764_000_000.0, 0x1000
    # 1,500 steps: each process's table of blocks is more than a pipe holds (64 kB), so a pipe
    # end left open where it should not be would hang the export (it did).
    for n in range(1500):
        secret = SECRETS[n % len(SECRETS)][1] if n % 7 == 0 else "nothing here"
        events: list[Event] = []
        bodies: list[Body] = []
        if n % 10 == 0:
            events.append(Event(ts=t, kind="message", role="assistant",
                                text=f"Step {n}: see #{rid - 1:04x}\n\n- `x{n}` and *y*\n- {secret}"))  # fmt: skip
        if n == 750:
            events.append(Event(ts=t, kind="compaction", text=f"summary {secret} #{rid - 2:04x}"))
        # Two calls before their results (parallel calls), so some results cross a page's start.
        refs = [f"c{n}a", f"c{n}b"]
        for ref in refs:
            events.append(Event(ts=t, kind="call", tool="bash", call_ref=ref,
                                args=json.dumps({"command": f"cat f{n} # {secret}"})))  # fmt: skip
        for ref in refs:
            stored = "".join(f"line {i} of {ref} {secret if i == 3 else ''}\n" for i in range(60))
            capped = n % 5 == 0
            shown = f"[#{rid:04x}]\n" + (stored[:400] + "[50 lines elided]\n" if capped else stored)
            events.append(Event(ts=t, kind="result", tool="bash", call_ref=ref, rid=rid,
                                rkind="full", capped=capped, shown_chars=len(shown),
                                shown_lines=shown.count("\n"), stored_chars=len(stored),
                                stored_lines=60))  # fmt: skip
            bodies.append(Body(rid, shown, stored))
            rid += 1
        await w.append(SID, events, bodies)
        t += 1
    await w.update_session(SID, ended=t)
    await w.close()


def _export(store: Path, out: Path, workers: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ctxview.cli", "--store", str(store),
                           "export", SID, "-o", str(out / "s.html"), "--page-mb", "0.2"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CTXVIEW_EXPORT_WORKERS": workers})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return re.sub(r" in [0-9.]+ s", "", done.stdout + done.stderr).replace(str(out), "OUT")


def _pages(folder: Path) -> dict[str, str]:
    stamp = re.compile(r"Exported by ctxview on [^<]* from the store")
    return {p.name: stamp.sub("", p.read_text(encoding="utf-8")) for p in folder.iterdir()}


def test_two_processes_write_the_same_pages_as_one(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    asyncio.run(_build(store))
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    said_one, said_two = _export(store, one, "1"), _export(store, two, "2")
    pages = _pages(one)
    assert len(pages) >= 8  # an index and enough pages for the split to fall mid-session
    # The plan the command makes divides the session: two processes made the blocks.
    source = Source(store, Redactor())
    plan = build(source, source.tree(SID), 4 * 200_000)
    source.close()
    assert plan.split is not None
    assert said_two == said_one  # the same summary line: pages, size, redactions by kind
    assert "redacted 0" not in said_one
    assert _pages(two) == pages
