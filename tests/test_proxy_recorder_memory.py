"""The recorder process's memory for a large request: a 10 MB body recorded from its spool in a
process of its own, as the recorder does, peaks at under four times the body over what the
process held before (it peaked at five: the bytes, the parsed tree, each message's text and
its UTF-8 for the hash, all at once), and the record is still whole. The hash made a slice at a
time is the store's own digest of the message (any text: non-ASCII, lone surrogates)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ctxview.context import requests as req
from ctxview.proxy import record

BODY = 10 << 20

SCRIPT = r"""
import asyncio, json, re, sys, time
from pathlib import Path
from ctxview.proxy import protocols, spool
from ctxview.proxy.record import Exchange
from ctxview.proxy.recorder_process import Storing


def rss() -> tuple[int, int]:
    text = Path("/proc/self/status").read_text()
    return tuple(int(re.search(rf"{k}:\s+(\d+) kB", text).group(1)) * 1024
                 for k in ("VmRSS", "VmHWM"))


async def main(store: Path, size: int) -> None:
    folder, _ = spool.create(store)
    storing = Storing(store)

    def put(i: int, n: int) -> str:
        body = json.dumps({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": f"{i} " + "x" * (n - 100)}]}).encode()
        ex = Exchange(method="POST", path="/v1/messages", upstream="http://127.0.0.1:9",
                      protocol=protocols.detect("POST", "/v1/messages"),
                      request_headers=[("content-type", "application/json")], body=b"",
                      started=time.time())
        entry = spool.Entry(folder, f"{i:010d}")
        entry.open(spool.meta_bytes(ex, final=False))
        entry.extend(body)
        assert entry.finish(spool.meta_bytes(ex, final=True))
        return entry.name

    assert await storing.one(folder, put(0, 10_000), live=False)  # imports, the store made
    name = put(1, size)
    before = rss()[0]
    Path("/proc/self/clear_refs").write_text("5")
    assert await storing.one(folder, name, live=False)
    peak = rss()[1] - before
    await storing.close()
    print(json.dumps({"peak": peak}))


asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
"""


def test_a_10_mb_body_is_recorded_within_four_times_its_size(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(store), str(BODY)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    peak = json.loads(done.stdout.strip().splitlines()[-1])["peak"]
    assert peak < 4 * BODY, f"the recorder peaked at +{peak / 2**20:.1f} MB for a 10 MB body"
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
        mp.setattr(record, "_SLICE", 3)  # every slice boundary falls inside the text
        assert record._digest_text(req.canonical_json(value)) == req.digest(value)
