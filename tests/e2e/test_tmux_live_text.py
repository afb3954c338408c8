"""Issue 16 §4.1 the user's way: a real Claude Code transcript written line by line at 10-20
lines a second while `ctxview follow` imports it and its viewer follows the store in tmux; then
every message's text on its screen (paged through from the top) is what a fresh viewer on the
same store shows. Claude Code writes one record per content block, so a message's text often
comes a record after its first (its thinking): live, it was missing."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import CTXVIEW, Tmux

ROOT = Path(__file__).resolve().parents[2]
REALDATA = ROOT.parent / "shared" / "realdata"
# 292 records, 80 assistant messages; the text of 44 comes in a later record than the message's
# first (one of them "Perfect! I've updated the README…", which the issue saw missing).
SOURCE = (REALDATA / "claude-code-log" / "-Users-dain-workspace-coderabbit-review-helper"
          / "cb2e607c-c758-415a-8b45-c49e4631906a.jsonl")  # fmt: skip
SIZE = (120, 40)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.realdata,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(not SOURCE.is_file(), reason="../shared/realdata is absent"),
]


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path, SIZE)
    yield t
    t.close()


def later_texts(path: Path) -> list[str]:
    """The text blocks that come in a later record than their message's first, each cut to
    its first line up to the first Markdown mark (what the screen shows of it, plainly)."""
    seen: set[str] = set()
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("message") if rec.get("type") == "assistant" else None
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
            continue
        mid = msg.get("id")
        for block in msg["content"]:
            if mid in seen and block.get("type") == "text" and block.get("text", "").strip():
                first = re.split(r"[*`_\[#<|]", block["text"].strip().split("\n")[0])[0]
                if len(first.strip()) >= 12:
                    out.append(first.strip()[:60])
        seen.add(mid)
    return out


def write_slowly(src: Path, dst: Path, done: threading.Event) -> None:
    """The transcript's lines appended one at a time, 10-20 a second (as Claude Code writes)."""
    pace = random.Random(16)
    with dst.open("a") as f:
        for line in src.read_text().splitlines(keepends=True)[1:]:
            f.write(line)
            f.flush()
            time.sleep(pace.uniform(1 / 20, 1 / 10))  # the rate under test, not a wait
    done.set()


def imported(store: Path, transcript: Path) -> bool:
    """The follow has committed every byte of the transcript."""
    try:
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        rows = conn.execute("SELECT data FROM sessions WHERE parent_session IS NULL").fetchall()
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    size = transcript.stat().st_size
    return any(json.loads(r[0]).get("import", {}).get("offset") == size for r in rows)


def body(screen: str) -> list[str]:
    """The transcript's rows of a screen: between the title line and the status line, the
    cursor's gutter and the scroll bar (its place differs with the view's length) cut off."""
    rows = screen.split("\n")[: SIZE[1]]
    status = next(i for i in range(len(rows) - 1, 0, -1) if " results · " in rows[i]
                  or rows[i].lstrip().startswith(("1 result", "0 results")))  # fmt: skip
    return [r[2 : SIZE[0] - 2].rstrip() for r in rows[1:status] if "new rows ↓" not in r]


def settled(tmux: Tmux, target: str, unlike: list[str] | None = None) -> list[str]:
    """The transcript's rows once drawn (no row still a '…' placeholder) and still, and, with
    `unlike`, other than those (the screen before a key: a still screen is not yet the key's
    answer when the viewer is slow to take it)."""
    last: list[str] | None = None
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            rows = body(tmux.screen(target))
        except StopIteration:  # no status line yet
            rows = []
        if rows and rows == last and rows != unlike and not any(r == "…" for r in rows):
            return rows
        last = rows
        time.sleep(0.15)
    raise AssertionError("the screen never settled:\n" + "\n".join(last or []))


def page_through(tmux: Tmux, target: str) -> list[str]:
    """Every row of the transcript from its first: home, then page down to the tail. The view
    is at its tail when called: that screen is the last page, so each key waits for the screen
    it changes (a screen that stayed as it was ended the paging early under load, the last
    texts unseen, in the fresh view as in the live one)."""
    tail = settled(tmux, target)
    tmux.keys("Home", target=target)
    page = settled(tmux, target, unlike=tail)  # the transcript is longer than a screen
    seen: list[str] = []
    for _ in range(400):
        seen.extend(page)
        if page == tail:
            return seen
        tmux.keys("PageDown", target=target)
        page = settled(tmux, target, unlike=page)
    raise AssertionError("paging never reached the end")


def test_live_view_shows_every_message_text_a_fresh_view_shows(tmux: Tmux, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
           "XDG_CACHE_HOME": str(home / "cache")}  # fmt: skip
    env.pop("CTXVIEW_STORE", None)
    store = tmp_path / "store" / "store.db"
    transcript = tmp_path / SOURCE.name
    transcript.write_text(SOURCE.read_text().splitlines(keepends=True)[0])
    tmux.start([CTXVIEW, "--store", str(store), "follow", str(transcript)], env)
    live = "e2e"
    tmux.wait(lambda s: " results · " in s or "0 results" in s, 60, "the followed session", live)

    done = threading.Event()
    writer = threading.Thread(target=write_slowly, args=(SOURCE, transcript, done), daemon=True)
    writer.start()
    writer.join(timeout=300)
    assert done.is_set(), "the transcript was not written in 300 s"
    end = time.monotonic() + 120
    while not imported(store, transcript):
        assert time.monotonic() < end, "follow did not import the whole transcript"
        time.sleep(0.1)
    sid = "cc-" + SOURCE.stem
    fresh = tmux.window("fresh", [CTXVIEW, "--store", str(store), "view", "--session", sid], env)
    # Both at the tail with every result: the live one has had the last commit.
    count = tmux.wait(lambda s: " results · " in s, 60, "the fresh view", fresh)
    results = re.search(r"([\d,]+) results · ", count)
    assert results is not None
    tmux.wait(lambda s: f"{results.group(1)} results · " in s, 60, "every result live", live)

    live_rows = page_through(tmux, live)
    fresh_rows = page_through(tmux, fresh)
    live_text, fresh_text = "\n".join(live_rows), "\n".join(fresh_rows)
    texts = later_texts(SOURCE)
    assert len(texts) >= 30
    missing_fresh = [t for t in texts if t not in fresh_text]
    assert not missing_fresh, missing_fresh  # the fresh view shows them: the check can see them
    missing_live = [t for t in texts if t not in live_text]
    assert not missing_live, f"{len(missing_live)} of {len(texts)} texts not live: {missing_live}"
    assert set(live_rows) == set(fresh_rows), (
        sorted(set(fresh_rows) - set(live_rows))[:20],
        sorted(set(live_rows) - set(fresh_rows))[:20],
    )
