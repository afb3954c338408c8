"""The small faults of issue 16 §3.7: no terminal key hint in the HTML (the viewer's "↵ leads
to"), a Markdown image named as one without a stray "!", titles and labels cut at a word with an
ellipsis (never mid-word), and pages within --page-mb (a block larger than that alone on its
page, which says so)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctxview.cli import main
from ctxview.store import Writer
from ctxview.store.records import Body, Event

CLI = [sys.executable, "-m", "ctxview.cli"]
LONG_PROMPT = ("Please refactor the timeline filtering so that whenever someone toggles a message "
               "type the counts stay consistent across every view and the tests still pass")  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("small") / "demo.db"
    subprocess.run([*CLI, "demo", "--no-view", "--pace", "0", "--store", str(store)],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    return store


def test_no_terminal_key_hints(demo: Path, tmp_path: Path) -> None:
    for fmt in ("html", "md"):
        out = tmp_path / f"d.{fmt}"
        assert main(["--store", str(demo), "export", "--format", fmt, "-o", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        assert "↵" not in text and "leads to" not in text, fmt
        assert "stands for" in text  # the stub still names what it stands for, linked


def test_an_image_is_named_without_a_stray_bang(tmp_path: Path) -> None:
    store = tmp_path / "img.db"

    async def build() -> None:
        w = await Writer.open(store)
        await w.create_session("img", title="img", next_rid=0x1000, started=1.0)
        await w.append("img", [Event(ts=1.0, kind="message", role="assistant",
                                     text="Here it is: ![the chart](chart.png) and ![](x.gif).")])  # fmt: skip
        await w.close()

    asyncio.run(build())
    out = tmp_path / "img.html"
    assert main(["--store", str(store), "export", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    body = text[text.index("Here it is:") :].split("</p>", 1)[0]
    assert "!" not in body.replace("<!", ""), body
    assert '<a class="image" href="chart.png"><span class="dim">image:</span> the chart</a>' in body
    assert "<img" not in text


def test_titles_are_cut_at_a_word(tmp_path: Path) -> None:
    """A session titled by its first prompt, and the contents' labels: a word boundary and an
    ellipsis, in the store, the HTML and the Markdown."""
    src = tmp_path / "long.jsonl"
    sid = "22222222-3333-4444-5555-666666666666"
    base = {"sessionId": sid, "cwd": "/w", "version": "2.1.0", "userType": "external",
            "isSidechain": False}  # fmt: skip
    records = [  # no title of its own: the first prompt names it
        {**base, "type": "user", "uuid": "u1", "parentUuid": None,
         "timestamp": "2026-01-01T10:00:00.000Z",
         "message": {"role": "user", "content": LONG_PROMPT + " " + LONG_PROMPT}},
        {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1",
         "timestamp": "2026-01-01T10:00:01.000Z", "requestId": "r1",
         "message": {"id": "m1", "role": "assistant", "model": "claude", "type": "message",
                     "content": [{"type": "text", "text": "Done."}],
                     "usage": {"input_tokens": 1, "output_tokens": 1}}},
    ]  # fmt: skip
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    store = tmp_path / "s.db"
    assert main(["--store", str(store), "import", str(src)]) == 0
    for fmt in ("html", "md"):
        out = tmp_path / f"s.{fmt}"
        assert main(["--store", str(store), "export", "--format", fmt, "-o", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        heading = re.search(r"<h1>(.*?)</h1>" if fmt == "html" else r"^# (.*)$", text, re.M)
        assert heading, fmt
        title = heading.group(1)
        assert title.endswith("…") and len(title) <= 80, title
        assert LONG_PROMPT.startswith(title[:-1].rstrip()), title
        assert LONG_PROMPT[len(title[:-1].rstrip())] == " ", title  # cut between words
        labels = re.findall(r'<li class="prompt"><a [^>]*>(.*?)</a>' if fmt == "html"
                            else r"^- \[(Please.*?)\]\(#m-", text, re.M)  # fmt: skip
        assert labels, fmt
        for label in labels:
            assert label.endswith("…") and len(label) <= 120, label
            words = (LONG_PROMPT + " " + LONG_PROMPT).split()
            assert label[:-1].rstrip().split()[-1] in words, label


async def _paged(path: Path, big: int) -> None:
    """Results of many sizes, ids that link across, and one result of `big` characters."""
    w = await Writer.open(path, fts_max_chars=0)
    await w.create_session("paged", title="paged", next_rid=0x1000, started=1.0)
    rid = 0x1000
    for n in range(400):
        size = big if n == 200 else 200 + (n * 7919) % 9000
        out = "\n".join(f"<{n}> & line {i} {'x' * 60}" for i in range(size // 70))
        shown = f"[#{rid:04x}]\n{out}"
        await w.append("paged", [
            Event(ts=1.0, kind="call", tool="bash", call_ref=f"c{n}", args='{"command": "ls"}'),
            Event(ts=1.0, kind="result", tool="bash", call_ref=f"c{n}", rid=rid, rkind="full",
                  shown_chars=len(shown), shown_lines=shown.count("\n") + 1,
                  stored_chars=len(out), stored_lines=out.count("\n") + 1),
            Event(ts=1.0, kind="message", role="assistant",
                  text=f"See #{rid:04x} and #{max(0x1000, rid - 150):04x}."),
        ], [Body(rid, shown, out)])  # fmt: skip
        rid += 1
    await w.close()


@pytest.mark.parametrize("mb", ["0.5", "0.1"])
def test_pages_stay_within_the_limit(tmp_path: Path, mb: str) -> None:
    limit = int(float(mb) * 1e6)
    store = tmp_path / "p.db"
    asyncio.run(_paged(store, int(limit * 1.5)))
    out = tmp_path / "p.html"
    for workers in ("1", "2"):
        done = subprocess.run([*CLI, "--store", str(store), "export", "paged", "-o", str(out),
                               "--page-mb", mb], capture_output=True, text=True, timeout=300,
                              env={**__import__("os").environ, "CTXVIEW_EXPORT_WORKERS": workers})  # fmt: skip
        assert done.returncode == 0, done.stderr
        pages = sorted(tmp_path.glob("p.p*.html"))
        assert len(pages) >= 3, pages
        over = [p for p in pages if p.stat().st_size > limit]
        # Only the page of the one block past the limit is larger, and it says so.
        assert len(over) == 1, [(p.name, p.stat().st_size) for p in over]
        said = over[0].read_text(encoding="utf-8")
        assert f"more than the {float(mb):g} MB a page may hold: a block is not split" in said
        assert said.count('<section class="tool"') == 1
        # The others are full: each but the last holds more than half the limit.
        sizes = [p.stat().st_size for p in pages if p not in over]
        assert all(s > limit * 0.5 for s in sizes[:-1]), sizes
        for p in pages:
            p.unlink()
