"""The HTML and Markdown exports: every id a link that lands on an anchor (across pages too),
stale links after a boundary, elided middles in place, diffs coloured, messages as Markdown with
raw HTML escaped, thinking folded, sub-agents under their call and linked both ways, a table of
contents, nothing fetched; memory flat in the session's length; the CLI's errors."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import tracemalloc
from html.parser import HTMLParser
from pathlib import Path

import pytest
from export_fixture import AGENT, FIRST, MAIN, make

from ctxview.cli import main
from ctxview.export.redact import Redactor
from ctxview.export.run import export_session
from ctxview.export.source import Source
from ctxview.store import Writer
from ctxview.store.records import Body, Event


class Page(HTMLParser):
    """The ids, links, tags and attributes of one page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (href, class)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "a" and a.get("href"):
            self.links.append((str(a["href"]), a.get("class") or ""))


def check_links(files: list[Path]) -> int:
    """Every in-page and cross-page link lands on an id; returns how many were checked."""
    pages = {f.name: Page(f.read_text(encoding="utf-8")) for f in files}
    n = 0
    for name, page in pages.items():
        for href, _ in page.links:
            if href.startswith(("http:", "https:", "mailto:")):
                continue
            target, _, anchor = href.partition("#")
            other = pages[target] if target else page
            if anchor:
                assert anchor in other.ids, f"{name}: {href} lands nowhere"
            n += 1
    return n


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("demo") / "demo.db"
    subprocess.run([sys.executable, "-m", "ctxview.cli", "demo", "--no-view", "--pace",
                    "0", "--store", str(store)], check=True, capture_output=True, timeout=120)  # fmt: skip
    return store


def export(store: Path, out: Path, *extra: str) -> None:
    assert main(["--store", str(store), "export", "-o", str(out), *extra]) == 0


def test_demo_html(demo_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.html"
    export(demo_store, out)
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert check_links([out]) > 40
    # A result's bracket is its anchor; a stub leads to what it stands for.
    assert {"1000", "1003", "1005", "100b"} <= page.ids
    assert re.search(r'<div class="bracket stub" id="100b">.*?stands for</span> '
                     r'<a class="id" href="#1003">#1003</a>', text)  # fmt: skip
    # The recall's bracket links the result it recalls; the model's words link ids.
    assert re.search(r'id="1006">\[<a class="id" href="#1006">#1006</a> recall '
                     r'<a class="id" href="#1005">#1005</a>', text)  # fmt: skip
    assert 'The run <a class="id" href="#1005">#1005</a>' in text
    # After the boundary, a link to an earlier result says it left the context.
    after = text[text.index('id="b-1"') :]
    assert re.search(r'<a class="id stale" href="#1005">#1005</a><span class="note"> \(not in '
                     r"context since boundary 1\)", after)  # fmt: skip
    # The boundary stands out, with its summary and files-read table, linked.
    boundary = after[: after.index("</section>")]
    assert "compaction 1" in boundary and "Files read before this summary" in boundary
    assert '<a class="id" href="#1001">#1001</a>' in boundary
    # The table of contents: the prompts and the boundary.
    toc = text[
        text.index('<nav class="toc">') : text.index("</nav>", text.index('<nav class="toc">'))
    ]
    assert 'href="#b-1"' in toc and toc.count('class="prompt"') == 3
    # The elided middle of the capped run, in place, from the stored text.
    assert '<details class="elision"><summary>[' in text
    assert "lines, from the stored text" in text
    # Diffs in colour with the file's language; reads coloured too.
    assert '<span class="da"><span class="m">+</span>' in text
    assert '<span class="dr"><span class="m">-</span>' in text
    assert re.search(r'<span class="da"><span class="m">\+</span>.*?<span class="n', text)
    assert ".hl .k" in text and "prefers-color-scheme: dark" in text
    # Messages as Markdown, thinking folded; long results folded.
    assert "<code>python3 run_tests.py</code>" in text
    assert '<details class="thinking"><summary>✻ thinking</summary>' in text
    assert '<details class="more"><summary>+' in text
    # The sub-agent under its task call, linked both ways.
    assert 'href="#agent-1">→ sub-agent 1</a>' in text
    agent = text[text.index('<details class="agent" id="agent-1">') :]
    assert re.search(r"Started by the call of <a class=\"id\" href=\"#100[0-9a-f]\">", agent)
    assert 'id="a1-1007"' in agent  # its parent's id space, its own namespace
    # Self-contained: nothing to fetch, a policy that forbids it.
    for tag, attrs in page.tags:
        assert "src" not in attrs, (tag, attrs)
        assert tag != "link"
    assert "default-src 'none'" in text


def test_pages_link_across(demo_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "paged.html"
    export(demo_store, out, "--page-mb", "0.03")
    pages = sorted(tmp_path.glob("paged.p*.html"))
    assert len(pages) >= 3
    checked = check_links([out, *pages])
    cross = [h for f in pages for h, _ in Page(f.read_text()).links if ".p0" in h and "#" in h]
    assert checked > 40 and cross, "no link crosses pages"
    index = out.read_text()
    assert all(p.name in index for p in pages)
    assert 'href="paged.p' in index and "b-1" in index  # the contents point into the pages
    for p in pages:
        assert p.stat().st_size < 200_000


def test_demo_markdown(demo_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.md"
    export(demo_store, out, "--format", "md")
    text = out.read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', text))
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert len(links) > 30
    assert set(links) <= anchors, set(links) - anchors
    assert "[#1005](#r-1005)" in text and '<a id="r-1005"></a>' in text
    assert "```python\n" in text and "```diff\n" in text
    assert "<details><summary>" in text
    assert "the 1,219 elided lines, from the stored text" in text
    assert "*(not in context since boundary 1)*" in text
    assert "## ━━ compaction 1 ━━" in text and "| path | lines | sha | result |" in text
    assert "sub-agent 1:" in text and '<a id="r-a1-1007"></a>' in text


def test_untrusted_text_is_escaped(tmp_path: Path) -> None:
    store = tmp_path / "x.db"

    async def build() -> None:
        w = await Writer.open(store)
        await w.create_session("xss", title="<script>alert(1)</script>", next_rid=0x1000,
                               started=1.0)  # fmt: skip
        evil = '<img src=x onerror="alert(2)"> <script>alert(3)</script> [a](javascript:alert(4))'
        await w.append("xss", [
            Event(ts=1.0, kind="message", role="user", text=evil),
            Event(ts=1.0, kind="call", tool="bash", call_ref="c", args='{"command": "echo <b>"}'),
            Event(ts=1.0, kind="result", tool="bash", call_ref="c", rid=0x1000, rkind="full",
                  shown_chars=10, shown_lines=2, stored_chars=5, stored_lines=1),
        ], [Body(0x1000, "[#1000]\n" + evil, evil)])  # fmt: skip
        await w.close()

    asyncio.run(build())
    for fmt, name in (("html", "x.html"), ("md", "x.md")):
        export(store, tmp_path / name, "--format", fmt)
        text = (tmp_path / name).read_text()
        if fmt == "md":  # inside a fenced block it is shown as code, never run
            text = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1$", "", text)
        assert "<script>alert" not in text and "<img" not in text, fmt
        assert 'href="javascript' not in text
    assert "&lt;script&gt;alert(1)" in (tmp_path / "x.html").read_text()


def test_all_writes_an_index(demo_store: Path, tmp_path: Path) -> None:
    folder = tmp_path / "all"
    assert main(["--store", str(demo_store), "export", "--all", "-o", str(folder)]) == 0
    index = (folder / "index.html").read_text()
    files = [p for p in folder.glob("*.html") if p.name != "index.html"]
    assert len(files) == 1  # the sub-agent is inside its session
    assert f'href="{files[0].name}"' in index and "(+1 sub-agents)" in index
    assert "Fix: cart total wrong" in index and "ended" in index


def test_cli_errors(demo_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(demo_store), "export", "nosuch"]) == 1
    assert main(["--store", str(demo_store), "export", "x", "--all"]) == 1
    assert main(["--store", str(tmp_path / "none.db"), "export"]) == 1
    assert main(["--store", str(demo_store), "export", "-o", str(tmp_path / "no" / "x.html")]) == 1
    err = capsys.readouterr().err.strip().split("\n")
    assert len(err) == 4 and all(line.startswith("ctxview: ") for line in err), err


def test_fixture_html_links(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    make(store)
    out = tmp_path / "s.html"
    export(store, out, MAIN)
    text = out.read_text()
    assert check_links([out]) > 5
    assert f'id="{FIRST:04x}"' in text and f'id="a1-{FIRST:04x}"' in text
    assert AGENT in text


async def _long(path: Path, results: int) -> None:
    w = await Writer.open(path, fts_max_chars=100)
    await w.create_session("long", title="long", next_rid=0x1000, started=1.0)
    async with w.batch():
        for n in range(results):
            rid = 0x1000 + n
            stored = f"run {n}\n" + "".join(f"line {i} of result {n}\n" for i in range(60))
            shown = f"[#{rid:04x}]\n" + "\n".join(stored.split("\n")[:4]) + (
                f"\n[50 lines elided, full output #{rid:04x}]\n") + "\n".join(stored.split("\n")[-6:])  # fmt: skip
            await w.append("long", [
                Event(ts=1.0, kind="call", tool="bash", call_ref=f"c{n}", args='{"command": "x"}'),
                Event(ts=1.0, kind="result", tool="bash", call_ref=f"c{n}", rid=rid, rkind="full",
                      capped=1, elided_lines=50, shown_chars=len(shown), shown_lines=12,
                      stored_chars=len(stored), stored_lines=61),
                Event(ts=1.0, kind="message", role="assistant", text=f"see #{rid:04x}"),
            ], [Body(rid, shown, stored)])  # fmt: skip
    await w.close()


def _peak(store: Path, out: Path) -> float:
    tracemalloc.start()
    source = Source(store, Redactor())
    export_session(source, "long", "html", out, 2_000_000)
    source.close()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def test_memory_stays_flat(tmp_path: Path) -> None:
    """Ten times the results, about the same peak: the export reads and writes in ranges."""
    small, big = tmp_path / "small.db", tmp_path / "big.db"
    asyncio.run(_long(small, 400))
    asyncio.run(_long(big, 4000))
    p_small = _peak(small, tmp_path / "small.html")
    p_big = _peak(big, tmp_path / "big.html")
    assert len(list(tmp_path.glob("big.p*.html"))) >= 3
    # The plan's maps grow by ~100 bytes a result; everything else is flat.
    assert p_big < p_small * 2.5 + 3, (p_small, p_big)


def test_elided_middle_lines() -> None:
    """The middle of a stored text, found from both ends, is exactly lines index..index+n-1."""
    import random

    from ctxview.export.html import _nth_lines

    rng = random.Random(11)
    for _ in range(3000):
        lines = [f"l{i}" * rng.randint(0, 3) for i in range(rng.randint(1, 150))]
        index, n = rng.randint(0, len(lines) + 2), rng.randint(0, len(lines) + 2)
        assert _nth_lines("\n".join(lines), index, n) == "\n".join(lines[index : index + n])
