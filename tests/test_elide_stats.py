"""`ctxview stats` with and without each measure: a session written through the engine, and every
real transcript of ../shared/realdata (marker realdata, skipped when absent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxview.context.state import replay_arms
from ctxview.engine.session import Session
from ctxview.rules.config import Config
from ctxview.store import Reader, Writer

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"


def ctxview(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxview.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )


async def _long_session(store: Path, ws: Path) -> str:
    ws.mkdir()
    async with await Writer.open(store) as writer:
        s = await Session.start(writer, ws, title="long")
        await s.message("user", "go")
        for i in range(60):
            await s.message("assistant", f"step {i}")
            await s.insert("bash", {"command": f"run {i}"}, f"{i} " * 1500)
        await s.end()
        return s.id


async def test_stats_json_gives_each_arm_per_session(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    sid = await _long_session(store, tmp_path / "ws")
    done = ctxview("--store", str(store), "stats", "--json",
                   "--set", "elide.threshold_chars=20000")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    (one,) = [s for s in doc["sessions"] if s["id"] == sid]
    for key in ("requests", "sent_chars_none", "sent_chars_hygiene", "sent_chars_elided",
                "prefix_breaks"):  # fmt: skip
        assert key in one
    assert one["requests"] == 60
    assert one["sent_chars_elided"] < one["sent_chars_hygiene"]
    assert one["prefix_breaks"] == one["arms"]["elided"]["strides"] > 0
    assert one["arms"]["hygiene"]["prefix_breaks"] == 0
    assert one["bill_elided"] < one["bill_hygiene"]  # long results, many requests: it pays
    assert doc["total"]["sent_chars_elided"] == one["sent_chars_elided"]
    # Same figures as a replay of the stored events.
    async with await Reader.open(store) as reader:
        events = await reader.events(sid)
    arms = replay_arms(events, Config({"elide.threshold_chars": 20000}))
    assert sum(r.sent_chars for r in arms["elided"].requests) == one["sent_chars_elided"]


async def test_stats_text_reports_what_is_re_sent(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    await _long_session(store, tmp_path / "ws")
    done = ctxview("--store", str(store), "stats")
    assert done.returncode == 0, done.stderr
    assert "What is re-sent" in done.stdout
    assert "Estimated bill" in done.stdout
    bad = ctxview("--store", str(store), "stats", "--set", "elide.nope=1")
    assert bad.returncode != 0 and "elide.nope" in bad.stderr


@pytest.mark.realdata
@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is absent")
@pytest.mark.parametrize("overrides", [{}, {"elide.threshold_chars": 40000}])
async def test_realdata_every_session_has_figures_and_elision_never_sends_more(
    tmp_path: Path, overrides: dict[str, Any]
) -> None:
    store = tmp_path / "store.db"
    done = ctxview("--store", str(store), "import", str(REALDATA))
    assert done.returncode == 0, done.stderr
    args = ["--store", str(store), "stats", "--json"]
    for key, value in overrides.items():
        args += ["--set", f"{key}={json.dumps(value)}"]
    done = ctxview(*args)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    sessions = doc["sessions"]
    assert len(sessions) >= 10
    config = Config(overrides)
    async with await Reader.open(store) as reader:
        for s in sessions:
            for arm in ("none", "hygiene", "elided"):
                assert isinstance(s[f"sent_chars_{arm}"], int)
            assert s["sent_chars_elided"] <= s["sent_chars_hygiene"]
            # Request by request, too.
            arms = replay_arms(await reader.events(s["id"]), config)
            h, e = arms["hygiene"].requests, arms["elided"].requests
            assert len(h) == len(e) == s["requests"]
            assert all(b.sent_chars <= a.sent_chars for a, b in zip(h, e, strict=True))
    total = doc["total"]
    assert total["sent_chars_elided"] <= total["sent_chars_hygiene"]
    assert total["requests"] > 100
    if overrides:
        assert total["sent_chars_elided"] < total["sent_chars_hygiene"]
