"""The context as sent, replayed in three arms (no measure, 3.0.0, 3.0.0 + elision), on the real
transcripts of ../shared/realdata: the speed target of issue 5 and the with/without figures.

    .venv/bin/python bench/bench_elide.py                 # speed, then the table per session
    .venv/bin/python bench/bench_elide.py --threshold 40000

(a) speed: the largest real Claude Code transcripts, concatenated until their files hold at least
    2 MB, imported into a temporary store; their events are replayed as one session with all
    three arms (median of 5). Target: <= 1 s. Timed twice: the replay alone, and reading the
    events from the store plus the replay (what `ctxview stats` does per session). The same
    events twenty times over show that the time grows linearly.
(b) figures: for every real session, what each request re-sent summed over the session, with no
    measure, with 3.0.0, and with 3.0.0 plus elision at the defaults (threshold 180,000 chars)
    and at --threshold; the prefix breaks; the estimated bill (input-token units, a prompt cache
    over the previous request: 1.25 x cache write + 0.1 x cache read). Markdown, for a note.
(c) one long session: every real session's events back to back as one session, at the defaults
    (the real sessions alone never reach the 180,000-character threshold). An illustration of a
    long session made of real turns, not a real session.
(d) result sizes: how many results are longer than elide.min_chars, and their share of the
    characters, which is why 2,000 is the default.

Not a timed test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ctxview.context.state import ARMS, figures, replay_arms
from ctxview.rules.as_sent import provider_of, rates
from ctxview.rules.config import Config
from ctxview.store import Reader
from ctxview.store.records import Event

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
TARGET_BYTES = 2_000_000


def median_time(fn, runs: int = 5) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def concatenated(sessions: list[list[Event]]) -> list[Event]:
    """Several sessions' events as one session's: renumbered, in order."""
    out: list[Event] = []
    for events in sessions:
        out.extend(replace(ev, seq=len(out) + i + 1) for i, ev in enumerate(events))
    return out


async def main(threshold: int) -> int:
    if not REALDATA.is_dir():
        print("../shared/realdata is absent: nothing to measure.")
        return 0
    with tempfile.TemporaryDirectory(prefix="ctxview-bench-elide-") as tmp:
        store = Path(tmp) / "store.db"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ctxview.cli", "--store", str(store), "import",
                        str(REALDATA)], check=True, capture_output=True)  # fmt: skip
        print(f"Imported {REALDATA} in {time.perf_counter() - t0:.2f} s (not part of the target).")
        async with await Reader.open(store) as reader:
            rows = await reader.sessions()
            claude = [
                r for r in rows
                if r.source == "claude-code" and r.source_path and Path(r.source_path).is_file()
                and not r.parent_session
            ]  # fmt: skip
            claude.sort(key=lambda r: Path(r.source_path or "").stat().st_size, reverse=True)
            chosen, size = [], 0
            for r in claude:
                if size >= TARGET_BYTES:
                    break
                chosen.append(r)
                size += Path(r.source_path or "").stat().st_size

            async def load() -> list[Event]:
                return concatenated([await reader.events(r.id) for r in chosen])

            events = await load()
            config = Config()
            low = Config({"elide.threshold_chars": threshold})

            print()
            print("(a) speed")
            print(f"    {len(chosen)} Claude Code transcripts, {size / 1e6:.2f} MB of JSONL, "
                  f"{len(events):,} events as one session:")  # fmt: skip
            for name in (r.source_path for r in chosen):
                print(f"      {name}")
            t_replay = median_time(lambda: replay_arms(events, config))
            t_low = median_time(lambda: replay_arms(events, low))
            t0 = time.perf_counter()
            for _ in range(5):
                replay_arms(await load(), config)
            t_store = (time.perf_counter() - t0) / 5
            five = concatenated([events] * 20)
            t_five = median_time(lambda: replay_arms(five, config), runs=3)
            ok = max(t_replay, t_low, t_store) <= 1.0
            print(f"    three arms, defaults:            {t_replay * 1000:7.1f} ms")
            print(f"    three arms, threshold {threshold:,}: {t_low * 1000:7.1f} ms")
            print(f"    read from the store + three arms: {t_store * 1000:7.1f} ms")
            print(f"    the same events x20 ({len(five):,} events): {t_five * 1000:7.1f} ms "
                  f"(x{t_five / t_replay:.1f})")  # fmt: skip
            print(f"    target <= 1 s: {'met' if ok else 'MISSED'}")
            states = replay_arms(events, low)
            f = {arm: figures(states[arm]) for arm in ARMS}
            print(f"    that session at threshold {threshold:,}: {f['hygiene'].requests} requests;"
                  f" re-sent none {f['none'].sent_chars:,}, 3.0.0 {f['hygiene'].sent_chars:,}, "
                  f"elided {f['elided'].sent_chars:,} chars; {f['elided'].strides} strides")  # fmt: skip

            print()
            print("(b) with and without, every real session (characters re-sent, summed over its")
            print(f"    requests; elided = 3.0.0 + elision at 180,000 / at {threshold:,} chars;")
            print("    bill in input-token units, 1.25 x cache write + 0.1 x cache read)")
            print()
            print(f"| session | src | reqs | peak ctx | none | 3.0.0 | elided 180k | elided "
                  f"{threshold // 1000}k | breaks | bill 3.0.0 | bill elided {threshold // 1000}k |")  # fmt: skip
            print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
            totals = dict.fromkeys(("none", "hyg", "e180", "elow", "bh", "bl"), 0.0)
            reqs = 0
            for r in rows:
                evs = await reader.events(r.id)
                default = replay_arms(evs, config)
                lowered = replay_arms(evs, low)
                price = rates(config, provider_of(r.source))
                fn, fh = figures(default["none"]), figures(default["hygiene"])
                fe, fl = figures(default["elided"]), figures(lowered["elided"])
                bh, bl = fh.bill(price), fl.bill(price)
                reqs += fh.requests
                for k, v in (("none", fn.sent_chars), ("hyg", fh.sent_chars),
                             ("e180", fe.sent_chars), ("elow", fl.sent_chars), ("bh", bh),
                             ("bl", bl)):  # fmt: skip
                    totals[k] += v
                print(f"| {r.id[:24]} | {r.source[:6]} | {fh.requests} | {fh.peak_chars:,} | "
                      f"{fn.sent_chars:,} | {fh.sent_chars:,} | {fe.sent_chars:,} | "
                      f"{fl.sent_chars:,} | {fh.prefix_breaks}/{fl.prefix_breaks} | "
                      f"{round(bh):,} | {round(bl):,} |")  # fmt: skip
            t = totals
            print(f"| **total** ({len(rows)}) | | {reqs} | | {round(t['none']):,} | "
                  f"{round(t['hyg']):,} | {round(t['e180']):,} | {round(t['elow']):,} | | "
                  f"{round(t['bh']):,} | {round(t['bl']):,} |")  # fmt: skip
            print()
            print(f"    3.0.0 against none: x{t['hyg'] / t['none']:.3f} of the characters re-sent;"
                  f" elision at 180k against 3.0.0: x{t['e180'] / t['hyg']:.3f}; at "
                  f"{threshold // 1000}k: x{t['elow'] / t['hyg']:.3f} characters, "
                  f"x{t['bl'] / t['bh']:.3f} estimated bill.")  # fmt: skip

            print()
            print("(c) one long session: every real session back to back (their contexts add up,")
            print("    as a long session's do), at the defaults")
            every = concatenated([await reader.events(r.id) for r in rows])
            arms = replay_arms(every, config)
            fa = {arm: figures(arms[arm]) for arm in ARMS}
            price = rates(config, "anthropic")
            for arm in ARMS:
                f = fa[arm]
                print(f"    {arm:8} {f.requests} requests, peak {f.peak_chars:,} chars, re-sent "
                      f"{f.sent_chars:,} chars (~{f.sent_tokens:,} tokens), {f.prefix_breaks} "
                      f"prefix breaks ({f.strides} strides), bill {round(f.bill(price)):,}")  # fmt: skip
            print(f"    elided / 3.0.0: x{fa['elided'].sent_chars / fa['hygiene'].sent_chars:.3f} "
                  f"characters, x{fa['elided'].bill(price) / fa['hygiene'].bill(price):.3f} bill; "
                  f"3.0.0 / none: x{fa['hygiene'].sent_chars / fa['none'].sent_chars:.3f} "
                  f"characters")  # fmt: skip

            print()
            print("(d) result sizes (3.0.0's shown text), every real session")
            sizes = []
            for r in rows:
                sizes += [ev.shown_chars or 0 for ev in await reader.events(r.id)
                          if ev.kind == "result"]  # fmt: skip
            whole = sum(sizes) or 1
            for cut in (500, 1000, 2000, 5000, 10000):
                big = [s for s in sizes if s > cut]
                print(f"    > {cut:6,} chars: {len(big):4} of {len(sizes)} results "
                      f"({100 * len(big) / max(len(sizes), 1):4.1f}%), "
                      f"{100 * sum(big) / whole:4.1f}% of the characters")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threshold", type=int, default=40_000,
                        help="a lower elide.threshold_chars to compare (default 40,000)")  # fmt: skip
    sys.exit(asyncio.run(main(parser.parse_args().threshold)))
