"""Markdown for GitHub (issue 16 §3.6): a session's Markdown past what GitHub takes in an issue or
a pull request's comment (65,536 characters) is said so on stderr, in one sentence; `--fit
github` writes a summary under that for any session (the prompts, the boundaries, the files
changed with their diffs, results by their first lines, a note of what was left out),
shortening gracefully: a big fixture, an extreme one (30,000 prompts), the largest real
sessions of ../shared/realdata."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from export_secrets import SECRETS

from ctxview.export.tally import tally_file
from ctxview.store import Writer
from ctxview.store.records import Body, Event

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
CLI = [sys.executable, "-m", "ctxview.cli"]
LIMIT = 65_536


def ctxview(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


async def _big(path: Path, sid: str, prompts: int, steps: int) -> None:
    """`prompts` long prompts (code fences in them), and per step: a command and its output,
    an edit of one of 200 files with a long diff, an assistant message; a compaction every
    50 steps; three sub-agents; planted keys in prompts and results."""
    w = await Writer.open(path, fts_max_chars=0)
    t = 1_764_000_000.0
    await w.create_session(sid, title="a long session " * 12, workspace="/w", next_rid=0x1000,
                           started=t)  # fmt: skip
    rid = 0x1000
    seq_prompts = max(1, steps // max(prompts, 1))
    async with w.batch():
        for n in range(max(steps, prompts)):
            events: list[Event] = []
            bodies: list[Body] = []
            k = n // seq_prompts if steps >= prompts else n
            if k < prompts and (steps < prompts or n % seq_prompts == 0):
                key = SECRETS[k % len(SECRETS)][1] if k % 9 == 0 else ""
                text = (f"Prompt {k}: please fix the cart {key}\n\n```python\ndef f():\n"
                        + "    return 1\n" * 40 + "```\n" + "More words about it. " * 80)  # fmt: skip
                events.append(Event(ts=t, kind="message", role="user", text=text))
            if n < steps:
                out = "\n".join(f"line {i} of step {n}" for i in range(30))
                shown = f"[#{rid:04x}]\n{out}"
                events += [Event(ts=t, kind="call", tool="bash", call_ref=f"b{n}",
                                 args=json.dumps({"command": f"make test STEP={n}"})),
                           Event(ts=t, kind="result", tool="bash", call_ref=f"b{n}", rid=rid,
                                 rkind="full", shown_chars=len(shown), shown_lines=31,
                                 stored_chars=len(out), stored_lines=30)]  # fmt: skip
                bodies.append(Body(rid, shown, out))
                rid += 1
                path_n = f"src/module_{n % 200}.py"
                diff = "\n".join(["@@ -1,75 +1,75 @@"] + [f"-old {i}\n+new {i}" for i in range(75)])
                shown = f"[#{rid:04x} {path_n} edited: +75 -75]\n{diff}"
                events += [Event(ts=t, kind="call", tool="edit", call_ref=f"e{n}",
                                 args=json.dumps({"path": path_n})),
                           Event(ts=t, kind="result", tool="edit", call_ref=f"e{n}", rid=rid,
                                 rkind="edit", path=path_n, shown_chars=len(shown),
                                 stored_chars=len(shown),
                                 data=json.dumps({"added": 75, "removed": 75}))]  # fmt: skip
                bodies.append(Body(rid, shown, shown))
                rid += 1
                events.append(Event(ts=t, kind="message", role="assistant",
                                    text=f"Step {n} done: the tests pass.\n\nDetails " * 5))  # fmt: skip
                if n % 50 == 49:
                    events.append(Event(ts=t, kind="compaction", text="Summary. " * 600))
                if n in (10, 20, 30):
                    events.append(Event(ts=t, kind="call", tool="task", call_ref=f"t{n}",
                                        args='{"description": "look"}'))  # fmt: skip
            await w.append(sid, events, bodies)
    for n in (10, 20, 30):
        if n < steps:
            await w.create_session(f"{sid}-agent-{n}", title=f"agent {n}", next_rid=0x1000,
                                   started=t + n, parent_session=sid, parent_call=f"t{n}")  # fmt: skip
    await w.close()


def fit(store: Path, sid: str, out: Path) -> str:
    ctxview("--store", str(store), "export", sid, "--fit", "github", "-o", str(out))
    return out.read_text(encoding="utf-8")


def check(text: str) -> None:
    """Under the limit, Markdown whose fences all close (the footer is outside any), the note,
    and the redactions it holds as it says."""
    assert len(text) < LIMIT, len(text)
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    assert not any(t.type == "fence" and "holds" in t.content and "Exported by ctxview" in t.content
                   for t in tokens)  # fmt: skip
    assert tokens[-1].type == "paragraph_close"
    assert "> A summary that fits in 65,536 characters" in text
    held = tally_file(text)
    said = re.search(r"this file holds (?:no redacted secrets|(\d+) redacted secrets?)", text)
    assert said, text[-300:]
    assert sum(held.values()) == int(said.group(1) or 0)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("fit") / "big.db"
    asyncio.run(_big(store, "big", prompts=300, steps=3000))
    return store


def test_a_big_session_fits(big: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain.md"
    done = ctxview("--store", str(big), "export", "big", "--format", "md", "-o", str(plain))
    size = len(plain.read_text(encoding="utf-8"))
    assert size > 10 * LIMIT
    # One sentence on stderr: how long, the limit, what to do.
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("ctxview: plain.md is "), (
        done.stderr)  # fmt: skip
    assert f"{size:,} characters" in done.stderr and "--fit github" in done.stderr
    text = fit(big, "big", tmp_path / "fit.md")
    check(text)
    assert "## Files changed (200)" in text and "`src/module_199.py`: 15 edits, +1125 −1125" in text
    assert "Prompt 0: please fix the cart" in text and "Prompt 299:" in text  # first and last
    assert "## ━━ compaction 1 ━━" in text and "## ━━ compaction 60 ━━" in text
    assert "**▸ bash** `make test STEP=0`" in text and "**▸ bash** `make test STEP=2999`" in text
    assert "left out here, to fit" in text and "Left out:" in text
    assert "[redacted: github-token]" in text and "ghp_" not in text
    assert "sub-agent 1: agent 10" in text


def test_a_small_session_is_whole_and_says_nothing(tmp_path: Path) -> None:
    store = tmp_path / "small.db"
    asyncio.run(_big(store, "small", prompts=2, steps=3))
    done = ctxview("--store", str(store), "export", "small", "--format", "md",
                   "-o", str(tmp_path / "s.md"))  # fmt: skip
    assert done.stderr == ""
    text = fit(store, "small", tmp_path / "fit.md")
    check(text)
    assert "left out here" not in text and text.count("**▸ bash**") == 3
    assert text.count("```diff") == 3  # every diff, whole (75 lines each: under the first cut)


def test_thirty_thousand_prompts_still_fit(tmp_path: Path) -> None:
    store = tmp_path / "prompts.db"
    asyncio.run(_big(store, "many", prompts=30_000, steps=0))
    text = fit(store, "many", tmp_path / "fit.md")
    check(text)
    assert "Prompt 0:" in text and "Prompt 29999:" in text
    assert re.search(r"\*… [\d,]+ prompts left out here, to fit …\*", text)


def test_fit_writes_markdown_only(tmp_path: Path) -> None:
    done = subprocess.run([*CLI, "--store", str(tmp_path / "x.db"), "export", "--fit", "github",
                           "--format", "html"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1
    assert (
        done.stderr.strip() == "ctxview: --fit writes Markdown: give --format md, or no --format."
    )


def _largest_real(n: int) -> list[Path]:
    files = [p for p in REALDATA.rglob("*.jsonl") if not p.name.startswith("agent-")]
    return sorted(files, key=lambda p: -p.stat().st_size)[:n]


@pytest.mark.realdata
@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is not here")
def test_the_largest_real_sessions_fit(tmp_path: Path) -> None:
    for i, src in enumerate(_largest_real(4)):
        out = tmp_path / f"real-{i}.md"
        done = subprocess.run([*CLI, "export", str(src), "--fit", "github", "-o", str(out)],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        if done.returncode != 0:
            assert "neither a Claude Code nor a Codex transcript" in done.stderr, done.stderr
            continue
        check(out.read_text(encoding="utf-8"))
