"""The viewer's speed and memory against issue 3's targets, headless (App.run_test).

    .venv/bin/python bench/bench_viewer.py              # all parts; builds the fixture once
    .venv/bin/python bench/bench_viewer.py --rebuild    # build the 100k-result store again

Prints its figures and a verdict per target; exits 1 with --strict when a target is missed.
The figures depend on the machine and on what else runs on it (note the load average printed).

Fixture: one session of 100,000 results (and their calls, a message every 10 results in
Markdown (see message_text), a compaction every 10,000) holding >= 500 MB of stored text, written straight through the store's
writer in batch mode (a fixture, not the engine's speed). Cached in the temp folder.

(a) first screen: a fresh process opens the app on that session; the time from constructing the
    app to the first screen drawn with its text (no placeholder), and the peak RSS of the
    process once the whole outline is loaded and 20 jumps are done. Targets: <= 1.5 s, <= 300 MB.
(b) jump: 20 jumps to random ids; from the call to the landed block's lines rendered with their
    text (events and bodies fetched). Target: median <= 100 ms.
(c) append: the cost of appending one row (outline update, heights, one render of the visible
    lines) with 100 rows loaded and with 100,000. Target: about the same.
(e) far jump: the jumps of (b) land on rows already loaded. Here the outline is not loaded yet:
    `--jump` to the oldest id (a fresh app; from constructing it to that row under the cursor,
    drawn with its text), and right after the first screen, 10 jumps in a row, each to a random id
    older than every row loaded at that moment (each loads the rows around its target first, then
    the rest around it). From the call to the target under the cursor and drawn with its text.
    Target: <= 100 ms.
(d) live: another process inserts 20 results a second through the engine, each holding the time
    just before its commit; the app records when the row is added and the screen refreshed.
    Target: p95 <= 150 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxview.store import SCHEMA_VERSION, Reader, Writer  # noqa: E402
from ctxview.store.records import Body, Event  # noqa: E402

RESULTS = 100_000
FIXTURE = Path(tempfile.gettempdir()) / "ctxview-bench-viewer" / "store.db"
SESSION = "bench-100k"
LIVE_SESSION = "bench-live"
SIZE = (120, 50)
# The fixture's shape: a marker from before this version is built again (3: Markdown messages,
# and a closing one on the first screen).
FIXTURE_VERSION = 3

_LINE = "    assert compute(value, depth={d}) == expected  # case {i} of the generated suite\n"


def stored_text(rid: int) -> str:
    """About 5,400 characters in 80 lines: a test run's output with the id in it."""
    head = f"run {rid:x}: collected 80 items\n"
    return head + "".join(_LINE.format(d=rid % 97, i=i) for i in range(80))


def message_text(n: int, rid: int) -> str:
    """The assistant's Markdown at step n (a message every 10 results), as real sessions write
    it: every message has inline code and a bullet list; every 5th a ```python fence of 10
    lines; every 20th a heading and a small table. Deterministic: the same text for the same n."""
    m = n // 10
    parts = []
    if m % 20 == 0:
        parts.append(f"### Progress at step {n}\n")
    parts.append(
        f"Step {n}: running `pytest -k case{n}` again; see #{rid - 1:04x}. The **failing** "
        f"case is `compute(value, depth={rid % 97})`:\n\n"
        f"- `depth={rid % 97}` returns *{m % 7}* instead of `{(m + 1) % 7}`\n"
        f"- the cache in `suite/fixtures.py` is stale after [the last run](#{rid - 1:04x})\n"
        f"- next: rerun with `--lf -x` and compare\n"
    )
    if m % 5 == 0:
        parts.append(
            "\n```python\n"
            f"def compute(value: int, depth: int = {rid % 97}) -> int:\n"
            '    """Fold value down to depth, memoised per call."""\n'
            "    seen: dict[int, int] = {}\n"
            "    for level in range(depth):\n"
            "        if level in seen:\n"
            "            continue\n"
            f"        value = (value * {m % 13 + 2} + level) % 1_000_003\n"
            "        seen[level] = value\n"
            "    return value\n"
            f"assert compute({n}) == expected  # step {n}\n"
            "```\n"
        )
    if m % 20 == 0:
        parts.append(
            "\n| case | depth | result |\n|---|---:|:---:|\n"
            f"| case{n} | {rid % 97} | fail |\n"
            f"| case{n + 1} | {(rid + 1) % 97} | pass |\n"
            f"| case{n + 2} | {(rid + 2) % 97} | pass |\n"
        )
    return "".join(parts)


async def build(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    # A short FTS prefix keeps the build fast; search is not what this bench measures.
    writer = await Writer.open(path, fts_max_chars=200)
    await writer.create_session(SESSION, title="bench: 100,000 results", workspace="/bench",
                                next_rid=0x1000, started=1_764_000_000.0)  # fmt: skip
    total = 0
    t = 1_764_000_000.0
    async with writer.batch():
        for n in range(RESULTS):
            rid = 0x1000 + n
            t += 0.5
            events: list[Event] = []
            if n % 10 == 0:
                events.append(Event(ts=t, kind="message", role="assistant",
                                    text=message_text(n, rid)))  # fmt: skip
            if n and n % 10_000 == 0:
                events.append(Event(ts=t, kind="compaction", text=f"Summary at {n}.",
                                    data=json.dumps({"rows": [], "inserted": ""})))  # fmt: skip
            ref = f"c{n}"
            stored = stored_text(rid)
            total += len(stored)
            lines = stored.split("\n")[:-1]
            shown_body = "\n".join(
                [*lines[:6], f"[70 lines elided, full output #{rid:04x}]", *lines[-4:]]
            )
            shown = f"[#{rid:04x}]\n{shown_body}"
            events.append(Event(ts=t, kind="call", tool="bash", call_ref=ref,
                                args=json.dumps({"command": f"pytest -k case{n}"})))  # fmt: skip
            events.append(Event(
                ts=t, kind="result", tool="bash", call_ref=ref, rid=rid, rkind="full", capped=1,
                elided_lines=70, shown_chars=len(shown), shown_lines=shown.count("\n") + 1,
                stored_chars=len(stored), stored_lines=80 + 1,
            ))  # fmt: skip
            await writer.append(SESSION, events, [Body(rid, shown, stored)])
        # The closing summary (heading, list, fence, table): the first screen shows the newest
        # rows, which would otherwise hold no message (one every 10 results, ~12 lines each).
        final = message_text(RESULTS, 0x1000 + RESULTS)
        await writer.append(SESSION, [Event(ts=t + 0.5, kind="message", role="assistant",
                                            text=final)], [])  # fmt: skip
    await writer.create_session(LIVE_SESSION, title="bench: live", workspace=str(path.parent),
                                next_rid=0x1000, started=1_764_000_000.0)  # fmt: skip
    await writer.close()
    marker = {"stored_chars": total, "schema": SCHEMA_VERSION, "results": RESULTS}
    (path.parent / "built").write_text(json.dumps({**marker, "fixture": FIXTURE_VERSION}))


def fixture(rebuild: bool) -> tuple[Path, int]:
    marker = FIXTURE.parent / "built"
    built = json.loads(marker.read_text()) if marker.exists() else {}
    if (rebuild or built.get("schema") != SCHEMA_VERSION or built.get("results") != RESULTS
            or built.get("fixture") != FIXTURE_VERSION):  # fmt: skip
        t0 = time.perf_counter()
        print(f"building the fixture at {FIXTURE} ...", flush=True)
        asyncio.run(build(FIXTURE))
        print(f"  built in {time.perf_counter() - t0:.1f} s", flush=True)
    return FIXTURE, json.loads(marker.read_text())["stored_chars"]


# The app side, in a fresh process.


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def mounted(app: Any, kind: type) -> Any:
    """The screen's widget of `kind`, once it is mounted."""
    while not app.screen.query(kind):
        await asyncio.sleep(0.001)
    return app.screen.query_one(kind)


async def press_for_panel(app: Any, pilot: Any) -> Any:
    """`c`, and the context panel it opens."""
    from ctxview.viewer.widgets.context_panel import ContextPanel

    await pilot.press("c")
    return await mounted(app, ContextPanel)


async def visible_ready(view: Any) -> None:
    """Until every line on screen is drawn with its text (no placeholder)."""
    while True:
        text = view.screen_text()
        if view.blocks and "…\n" not in text + "\n" and not view.bodies.loading:
            placeholders = [ln for ln in text.split("\n") if ln.strip() == "…"]
            if not placeholders:
                return
        await asyncio.sleep(0.001)


async def child_open(store: Path) -> dict[str, Any]:
    from ctxview.viewer.app import CtxviewApp
    from ctxview.viewer.widgets.transcript_view import TranscriptView

    out: dict[str, Any] = {"rss_before_mb": rss_mb()}
    t0 = time.perf_counter()
    app = CtxviewApp(store, session=SESSION, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await mounted(app, TranscriptView)
        out["view_mounted_s"] = time.perf_counter() - t0
        while view.first_screen_at is None:
            await asyncio.sleep(0.002)
        # Set by the view after the refresh that follows every visible block being laid
        # out with its text (events and bodies fetched, no placeholder).
        out["first_screen_s"] = view.first_screen_at - t0
        out["first_screen_from_exec_s"] = time.time() - float(
            os.environ.get("BENCH_SPAWNED", "nan")
        )
        assert "…" not in [ln.strip() for ln in view.screen_text().split("\n")]
        while not view.fully_loaded:
            await asyncio.sleep(0.01)
        out["outline_loaded_s"] = time.perf_counter() - t0
        out["blocks"] = len(view.blocks)
        # (b) jumps
        rng = random.Random(7)
        rids = [0x1000 + rng.randrange(RESULTS) for _ in range(20)]
        times = []
        screen = app.screen
        for rid in rids:
            t = time.perf_counter()
            assert screen.jump_to(rid)
            await visible_ready(view)
            times.append(time.perf_counter() - t)
            assert view.cursor_block.rid == rid
            await pilot.pause()
        out["jump_ms"] = [round(x * 1000, 2) for x in times]
        # (c) append at 100,000 rows
        out["append_100k_ms"] = await append_cost(view)
        out["rss_peak_mb"] = rss_mb()
    return out


async def child_far(store: Path) -> dict[str, Any]:
    from ctxview.viewer.app import CtxviewApp
    from ctxview.viewer.widgets.transcript_view import TranscriptView

    out: dict[str, Any] = {}
    oldest = 0x1000
    t0 = time.perf_counter()
    app = CtxviewApp(store, session=SESSION, jump=f"#{oldest:04x}", watch=False)
    async with app.run_test(size=SIZE):
        view = await mounted(app, TranscriptView)
        while view.cursor_block is None or view.cursor_block.rid != oldest:
            await asyncio.sleep(0.001)
        out["jump_option_cursor_s"] = time.perf_counter() - t0
        await visible_ready(view)
        out["jump_option_drawn_s"] = time.perf_counter() - t0
        out["jump_option_loaded_rows"] = len(view.blocks)
        assert view.cursor_block.rid == oldest and not view.fully_loaded
    app = CtxviewApp(store, session=SESSION, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await mounted(app, TranscriptView)
        while view.first_screen_at is None:
            await asyncio.sleep(0.001)
        rng = random.Random(11)
        times, cursor, far = [], [], []
        screen = app.screen
        for _ in range(10):
            # An id older than every loaded row (the loaded rows move with each far jump).
            loaded = min(view.outline.by_rid, default=0x1000 + RESULTS)
            rid = 0x1000 + rng.randrange(max(loaded - 0x1000, 1))
            far.append(view.outline.block_of(rid) is None)
            t = time.perf_counter()
            screen.jump_to(rid)
            while view.cursor_block is None or view.cursor_block.rid != rid:
                await asyncio.sleep(0.001)
            cursor.append(time.perf_counter() - t)
            await visible_ready(view)
            times.append(time.perf_counter() - t)
            await pilot.pause()
        out["far_jump_ms"] = [round(x * 1000, 1) for x in times]
        out["far_jump_cursor_ms"] = [round(x * 1000, 1) for x in cursor]
        out["far_jumps_not_loaded"] = far
    return out


async def child_context(store: Path) -> dict[str, Any]:
    """(f) `c` on the 100,000-result session: from the key to the panel's first paint with
    figures (not "Replaying..."), and to the whole session replayed."""
    from ctxview.viewer.app import CtxviewApp
    from ctxview.viewer.widgets.transcript_view import TranscriptView

    app = CtxviewApp(store, session=SESSION, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        view = await mounted(app, TranscriptView)
        while view.first_screen_at is None or not view.fully_loaded:
            await asyncio.sleep(0.01)
        t = time.perf_counter()
        panel = await press_for_panel(app, pilot)
        while panel.first_paint_at is None:
            await asyncio.sleep(0.002)
        first = panel.first_paint_at - t
        while panel.done_at is None:
            await asyncio.sleep(0.01)
        done = panel.done_at - t
        requests = len(panel.figures.requests("hygiene"))
        # Shown again: the figures replayed before are kept.
        await pilot.press("c")
        await pilot.pause()
        t = time.perf_counter()
        panel = await press_for_panel(app, pilot)
        while panel.done_at is None:
            await asyncio.sleep(0.002)
        again = time.perf_counter() - t
    return {"first_paint_s": round(first, 3), "done_s": round(done, 2), "requests": requests,
            "again_s": round(again, 3)}  # fmt: skip


async def append_cost(view: Any, rounds: int = 200) -> float:
    """Median ms to append one message row and render the visible lines."""
    from ctxview.viewer.layout.outline import OUTLINE_COLUMNS

    times = []
    for _ in range(rounds):
        seq = view.outline.last_seq + 1
        row = dict.fromkeys(OUTLINE_COLUMNS)
        row.update(seq=seq, kind="message", role="assistant", capped=0, text_lines=1)
        view.bodies.events[seq] = Event(ts=0.0, kind="message", role="assistant",
                                  text=f"appended row {seq}", seq=seq)  # fmt: skip
        t = time.perf_counter()
        view.add_rows([tuple(row[c] for c in OUTLINE_COLUMNS)], live=True)
        view.screen_text()
        times.append(time.perf_counter() - t)
        await asyncio.sleep(0)
    return round(statistics.median(times) * 1000, 3)


async def child_small(store: Path) -> dict[str, Any]:
    """Append cost with 100 rows: a session of 100 rows in a store of its own."""
    from ctxview.viewer.app import CtxviewApp
    from ctxview.viewer.widgets.transcript_view import TranscriptView

    small = Path(tempfile.mkdtemp()) / "small.db"
    writer = await Writer.open(small)
    await writer.create_session("small", next_rid=0x1000, started=0.0)
    for n in range(50):
        rid = 0x1000 + n
        await writer.append("small", [
            Event(ts=0.0, kind="call", tool="bash", call_ref=f"c{n}", args="{}"),
            Event(ts=0.0, kind="result", tool="bash", call_ref=f"c{n}", rid=rid, rkind="full",
                  shown_chars=20, shown_lines=2, stored_chars=10, stored_lines=1),
        ], [Body(rid, f"[#{rid:04x}]\nok", "ok")])  # fmt: skip
    await writer.close()
    app = CtxviewApp(small, session="small", watch=False)
    async with app.run_test(size=SIZE):
        view = await mounted(app, TranscriptView)
        while not view.fully_loaded:
            await asyncio.sleep(0.005)
        await visible_ready(view)
        return {"rows": view.outline.last_seq, "append_100_ms": await append_cost(view)}


async def child_live(store: Path, count: int, rate: float) -> dict[str, Any]:
    from ctxview.viewer.app import CtxviewApp
    from ctxview.viewer.widgets.transcript_view import TranscriptView

    seen: dict[int, float] = {}  # the screen refreshed after the row was added
    added: dict[int, float] = {}  # the row added to the transcript
    app = CtxviewApp(store, session=LIVE_SESSION)
    async with app.run_test(size=SIZE) as pilot:
        view = await mounted(app, TranscriptView)
        while not view.fully_loaded:
            await asyncio.sleep(0.005)
        start_rid = max(view.outline.by_rid, default=0)

        def drawn(rids: list[int]) -> None:
            now = time.time()
            seen.update(dict.fromkeys(rids, now))

        def appended(blocks: list[Any]) -> None:
            now = time.time()
            rids = [b.rid for b in blocks if b.rid is not None]
            added.update(dict.fromkeys(rids, now))
            view.call_after_refresh(drawn, rids)

        view.append_hooks.append(appended)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--insert", str(store), str(count), str(rate),
        )  # fmt: skip
        await proc.wait()
        deadline = time.time() + 5
        while len([r for r in seen if r > start_rid]) < count and time.time() < deadline:
            await pilot.pause(0.05)
        async with await Reader.open(store) as reader:
            bodies = await reader.bodies(LIVE_SESSION, [r for r in seen if r > start_rid])
    delays, adds = [], []
    for rid, body in bodies.items():
        written = float(body.stored.split("committed at ", 1)[1].split()[0])
        delays.append((seen[rid] - written) * 1000)
        adds.append((added[rid] - written) * 1000)
    delays.sort()
    adds.sort()
    return {
        "count": len(delays),
        "median_ms": round(statistics.median(delays), 1),
        "p95_ms": round(delays[int(len(delays) * 0.95) - 1], 1),
        "max_ms": round(delays[-1], 1),
        "added_median_ms": round(statistics.median(adds), 1),
        "added_p95_ms": round(adds[int(len(adds) * 0.95) - 1], 1),
    }


async def insert(store: Path, count: int, rate: float) -> None:
    """The other process: the engine inserting `rate` results a second."""
    from ctxview.engine.session import Session

    writer = await Writer.open(store)
    s = await Session.resume(writer, LIVE_SESSION)
    period = 1.0 / rate
    nxt = time.monotonic()
    for n in range(count):
        nxt += period
        await asyncio.sleep(max(0.0, nxt - time.monotonic()))
        await s.insert(
            "bash", {"command": f"echo {n}"}, f"line {n}\ncommitted at {time.time():.6f} ok"
        )
    await writer.close()


def run_child(*args: str) -> dict[str, Any]:
    """A part's figures from a fresh process, with the load average before and after it (the
    machine's other work moves every figure)."""
    env = {**os.environ, "BENCH_SPAWNED": repr(time.time())}
    before = os.getloadavg()[0]
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600, env=env)  # fmt: skip
    if done.returncode:
        print(done.stdout, done.stderr, file=sys.stderr)
        raise SystemExit(f"the child {args[1]} failed")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["load"] = f"[load average {before:.2f} -> {os.getloadavg()[0]:.2f}]"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--live-count", type=int, default=200)
    parser.add_argument("--child", choices=["open", "small", "live", "far", "context"])
    parser.add_argument("--jump", action="store_true", help="only (e), the far jumps")
    parser.add_argument("--insert", nargs=3, metavar=("STORE", "COUNT", "RATE"))
    parser.add_argument("args", nargs="*")
    a = parser.parse_args()
    if a.insert:
        asyncio.run(insert(Path(a.insert[0]), int(a.insert[1]), float(a.insert[2])))
        return 0
    if a.child == "open":
        print(json.dumps(asyncio.run(child_open(Path(a.args[0])))))
        return 0
    if a.child == "far":
        print(json.dumps(asyncio.run(child_far(Path(a.args[0])))))
        return 0
    if a.child == "context":
        print(json.dumps(asyncio.run(child_context(Path(a.args[0])))))
        return 0
    if a.child == "small":
        print(json.dumps(asyncio.run(child_small(Path(a.args[0])))))
        return 0
    if a.child == "live":
        print(json.dumps(asyncio.run(child_live(Path(a.args[0]), int(a.args[1]), 20.0))))
        return 0

    store, chars = fixture(a.rebuild)
    size = sum(
        Path(str(store) + s).stat().st_size for s in ("", "-wal") if Path(str(store) + s).exists()
    )
    print(f"fixture: {RESULTS:,} results, {chars / 1e6:,.0f} MB of stored text, "
          f"store {size / 1e6:,.0f} MB; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")  # fmt: skip
    ok = True

    def verdict(good: bool) -> str:
        nonlocal ok
        ok = ok and good
        return "ok" if good else "MISSED"

    far = run_child("--child", "far", str(store))
    print(f"(e) --jump to the oldest id: under the cursor at {far['jump_option_cursor_s']:.3f} s, "
          f"drawn with its text at {far['jump_option_drawn_s']:.3f} s from constructing the app "
          f"({far['jump_option_loaded_rows']:,} blocks loaded then; target <= 1.5 s like a first "
          f"screen) {verdict(far['jump_option_drawn_s'] <= 1.5)} {far['load']}")  # fmt: skip
    fj, fc, nl = far["far_jump_ms"], far["far_jump_cursor_ms"], far["far_jumps_not_loaded"]
    print(f"    10 jumps to random old ids right after opening, {sum(nl)} of them to rows not "
          f"loaded yet: drawn with its text in median {statistics.median(fj):.1f} ms, max "
          f"{max(fj):.1f} ms (target median <= 100 ms) {verdict(statistics.median(fj) <= 100)}")  # fmt: skip
    for i, (d, c, n) in enumerate(zip(fj, fc, nl, strict=True)):
        print(f"      jump {i + 1}: {'not loaded' if n else 'loaded':<10}  cursor on it {c:6.1f} ms,"
              f" drawn {d:6.1f} ms")  # fmt: skip
    if a.jump:
        return 1 if (a.strict and not ok) else 0
    opened = run_child("--child", "open", str(store))
    print(f"(a) first screen: {opened['first_screen_s']:.3f} s (target <= 1.5 s) "
          f"{verdict(opened['first_screen_s'] <= 1.5)}; whole outline ({opened['blocks']:,} blocks) "
          f"loaded at {opened['outline_loaded_s']:.2f} s; from the process's start, Python "
          f"imports included: {opened['first_screen_from_exec_s']:.2f} s "
          f"{opened['load']}")  # fmt: skip
    print(f"    peak RSS: {opened['rss_peak_mb']:.0f} MB (target <= 300 MB) "
          f"{verdict(opened['rss_peak_mb'] <= 300)}; after imports {opened['rss_before_mb']:.0f} MB")  # fmt: skip
    jumps = opened["jump_ms"]
    med = statistics.median(jumps)
    print(f"(b) jump to a random id: median {med:.1f} ms, max {max(jumps):.1f} ms over {len(jumps)} "
          f"(target median <= 100 ms) {verdict(med <= 100)}")  # fmt: skip
    small = run_child("--child", "small", str(store))
    a100, a100k = small["append_100_ms"], opened["append_100k_ms"]
    print(f"(c) append one row: {a100:.3f} ms at 100 rows, {a100k:.3f} ms at 100,000 rows "
          f"(target: about the same) {verdict(a100k <= max(3 * a100, a100 + 1.0))} "
          f"{small['load']}")  # fmt: skip
    live = run_child("--child", "live", str(store), str(a.live_count))
    print(f"(d) live, another process inserting 20 results/s: {live['count']} rows; commit to "
          f"row added: median {live['added_median_ms']} ms, p95 {live['added_p95_ms']} ms; to the "
          f"screen refreshed with it: median {live['median_ms']} ms, p95 {live['p95_ms']} ms, max "
          f"{live['max_ms']} ms (target p95 <= 150 ms) {verdict(live['p95_ms'] <= 150)} "
          f"{live['load']}")  # fmt: skip
    ctx = run_child("--child", "context", str(store))
    print(f"(f) context panel (c) on {ctx['requests']:,} requests: first paint {ctx['first_paint_s']:.3f} s "
          f"(target <= 1 s) {verdict(ctx['first_paint_s'] <= 1.0)}; the whole session replayed at "
          f"{ctx['done_s']:.1f} s; shown again {ctx['again_s']:.3f} s {ctx['load']}")  # fmt: skip
    return 1 if (a.strict and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
