"""The recorder process's memory for a large request: a 10 MB body recorded from its spool in a
process of its own, as the recorder does, peaks at under 4.5 times the body over what the
process held before (it peaked at five: the bytes, the parsed tree, each message's text and
its UTF-8 for the hash, all at once; now about four), and the record is still whole. The hash made a slice at a
time is the store's own digest of the message (any text: non-ASCII, lone surrogates)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ctxview.context import requests as req
from ctxview.proxy import keying, protocols, record, spool
from ctxview.proxy.record import Exchange

BODY = 10 << 20

SCRIPT = r"""
import asyncio, json, re, sys
from pathlib import Path
from ctxview.proxy.recorder_process import Storing


def rss() -> tuple[int, int]:
    text = Path("/proc/self/status").read_text()
    return tuple(int(re.search(rf"{k}:\s+(\d+) kB", text).group(1)) * 1024
                 for k in ("VmRSS", "VmHWM"))


async def main(store: Path, folder: Path) -> None:
    storing = Storing(store)
    assert await storing.one(folder, "0000000000", live=False)  # imports, the store made
    before = rss()[0]
    Path("/proc/self/clear_refs").write_text("5")
    assert await storing.one(folder, "0000000001", live=False)
    peak = rss()[1] - before
    await storing.close()
    print(json.dumps({"peak": peak}))


asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
"""


def _spool(folder: Path, i: int, size: int) -> None:
    """An exchange spooled as the proxy spools one."""
    body = json.dumps({"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": f"{i} " + "x" * (size - 100)}]}).encode()  # fmt: skip
    ex = Exchange(method="POST", path="/v1/messages", upstream="http://127.0.0.1:9",
                  protocol=protocols.detect("POST", "/v1/messages"),
                  request_headers=[("content-type", "application/json")], body=b"",
                  started=time.time())  # fmt: skip
    entry = spool.Entry(folder, f"{i:010d}")
    entry.open(spool.meta_bytes(ex, final=False))
    entry.extend(body)
    assert entry.finish(spool.meta_bytes(ex, final=True))


def test_a_10_mb_body_is_recorded_within_four_and_a_half_times_its_size(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    folder, lock = spool.create(store)
    try:
        _spool(folder, 0, 10_000)
        _spool(folder, 1, BODY)
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(store), str(folder)],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
    finally:
        spool.remove(folder)
        os.close(lock)
    assert done.returncode == 0, done.stderr
    peak = json.loads(done.stdout.strip().splitlines()[-1])["peak"]
    assert peak < 4.5 * BODY, f"the recorder peaked at +{peak / 2**20:.1f} MB for a 10 MB body"
    # The record is whole: parsed, its message stored once, the body rebuilt as it came.
    conn = sqlite3.connect(store)
    try:
        rows = conn.execute("SELECT body_bytes, parsed, body_raw FROM proxy_records "
                            "ORDER BY seq").fetchall()  # fmt: skip
    finally:
        conn.close()
    assert [(r[1], r[2]) for r in rows] == [(1, None), (1, None)]
    assert BODY - 100 < rows[1][0] <= BODY


@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=40))
@example("a\ud800\u00e9\U0001f600b\udfffz")
def test_the_sliced_hash_is_the_digest(text: str) -> None:
    value = {"role": "user", "content": [{"type": "text", "text": text}]}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(keying, "SLICE", 3)  # every slice boundary falls inside the text
        assert record._digest_text(req.canonical_json(value)) == req.digest(value)
        # A session keyed by its opening: the same hash as the whole text's.
        body = {"messages": [value]}
        parts = protocols.split(protocols.ANTHROPIC, body)
        assert parts is not None
        opening = [protocols.ANTHROPIC, parts.system, value]
        whole = json.dumps(opening, sort_keys=True, ensure_ascii=False, default=str)
        assert keying.conversation_hash(protocols.ANTHROPIC, body) == hashlib.sha256(
            whole.encode("utf-8", "surrogatepass")).hexdigest()[:16]  # fmt: skip
