"""What `ctxview proxy` adds: latency to the first and the last byte of the answer, proxy vs
direct to a scripted Messages server, p50/p95, for 10 KB, 1 MB and 10 MB requests, with the
proxy's CPU per request; the proxy's memory for a 10 MB request (and its recorder process's)
and with 100 concurrent streams.

Each size is sent twice over: back to back (each request as soon as the one before is
answered, so the recorder process falls behind at 10 MB) and paced as an agent sends (each
proxied request once the one before is recorded, as it is after the model's answer and the tool
calls). Under each row, the probe of the spool's pool: the requests whose body went over a
recorded body's file apart from those whose body went into a new one, and the proxy's page
faults a request.

Four processes, as in use: the scripted server (`python bench_proxy.py --serve`), the real
`ctxview proxy` command recording into a temporary store, its recorder process, and this client
(aiohttp). The memory is each process's RSS from /proc (its high-water mark reset with
clear_refs), for the 10 MB request in a fresh proxy."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

EVENTS = [
    {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                          "content": [], "usage": {"input_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    *[{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta",
                                                            "text": "word "}}] * 20,
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}},
    {"type": "message_stop"},
]  # fmt: skip
# Back to back: each request as soon as the one before it is answered (the recorder, ~120 ms of
# CPU per 10 MB body at low priority, falls behind). Paced as an agent sends: the next request
# once the previous one is recorded, as it is after the model's answer and the tool calls.
MODES = ("back-to-back", "paced")
SSE = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in EVENTS]


async def _serve(port_file: str) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        slow = float(request.query.get("pace", "0"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for chunk in SSE:
            await resp.write(chunk)
            if slow:
                await asyncio.sleep(slow)
        await resp.write_eof()
        return resp

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    Path(port_file).write_text(str(site._server.sockets[0].getsockname()[1]))  # type: ignore[union-attr]
    await asyncio.Event().wait()


def _rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in bytes."""
    text = Path(f"/proc/{pid}/status").read_text()
    get = lambda k: int(re.search(rf"{k}:\s+(\d+) kB", text).group(1)) * 1024  # type: ignore[union-attr]  # noqa: E731
    return get("VmRSS"), get("VmHWM")


def _cpu_ms(pid: int) -> float:
    """The process's CPU so far (user + system, all its threads), in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _faults(pid: int) -> int:
    """The process's minor page faults so far (each a page of memory it touched anew)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


def _reset_hwm(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _recorded(store: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM proxy_records").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _lost(store: Path) -> int:
    """Records the proxy dropped (past the spool's budget, when the recorder is behind), from
    the failures log `ctxview doctor` reads."""
    try:
        lines = Path(f"{store}.hook-failures.jsonl").read_text().splitlines()
    except OSError:
        return 0
    return sum(1 for line in lines if '"event": "proxy"' in line and "not recorded" in line)


async def _until_recorded(store: Path, n: int, timeout: float = 120.0) -> None:
    """Until `n` requests are recorded or their loss is logged."""
    end = time.monotonic() + timeout
    while (done := _recorded(store) + _lost(store)) < n:
        if time.monotonic() > end:
            raise SystemExit(f"bench_proxy: {n - done} request(s) never recorded")
        await asyncio.sleep(0.02)


def _start_proxy(up: str, store: Path) -> tuple[subprocess.Popen[str], str]:
    ctxview = Path(sys.executable).with_name("ctxview")
    env = {**os.environ, "CTXVIEW_STORE": str(store)}
    proxy = subprocess.Popen([str(ctxview), "proxy", "--upstream", up], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proxy.stdout is not None
    base = proxy.stdout.readline().strip().split("=", 1)[1]  # export ANTHROPIC_BASE_URL=…
    return proxy, base


async def _memory(up: str, tmp: Path) -> None:
    """One 10 MB request through a fresh proxy (no freed memory of earlier requests to reuse,
    which made a reused process's high-water mark read as nothing): each process's peak RSS
    over its RSS just before, the forwarding proxy's and its recorder's apart."""
    store = tmp / "memory.db"
    proxy, base = _start_proxy(up, store)
    try:
        url = f"{base}/v1/messages?beta=true"
        async with aiohttp.ClientSession() as s:
            await _one(s, url, _body(10_000, 0))  # imports done, the store made
            await _until_recorded(store, 1)
            [rec] = _children(proxy.pid)
            before = {pid: _rss(pid)[0] for pid in (proxy.pid, rec)}
            for pid in before:
                _reset_hwm(pid)
            await _one(s, url, _body(10 << 20, 1))
            await _until_recorded(store, 2)
        peak = {pid: _rss(pid)[1] - before[pid] for pid in before}
        print(f"10 MB request (body {len(_body(10 << 20, 1)) / 2**20:.1f} MB): peak RSS over "
              f"the RSS before it: proxy {peak[proxy.pid] / 2**20:+.1f} MB (over "
              f"{before[proxy.pid] / 2**20:.1f}), recorder process {peak[rec] / 2**20:+.1f} MB "
              f"(over {before[rec] / 2**20:.1f})")  # fmt: skip
    finally:
        proxy.terminate()
        proxy.wait()


def _body(size: int, i: int) -> bytes:
    filler = "x" * max(0, size - 400)
    return json.dumps({"model": "m", "max_tokens": 10, "stream": True,
                       "messages": [{"role": "user", "content": f"{i} {filler}"}]}).encode()  # fmt: skip


async def _one(s: aiohttp.ClientSession, url: str, raw: bytes) -> tuple[float, float]:
    t0 = time.perf_counter()
    async with s.post(url, data=raw, headers={"content-type": "application/json",
                                              "x-api-key": "bench"}) as resp:  # fmt: skip
        first = None
        async for _ in resp.content.iter_any():
            if first is None:
                first = time.perf_counter() - t0
        last = time.perf_counter() - t0
    return (first or last) * 1000, last * 1000


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(
        values) > 1 else values[0]  # fmt: skip


def _spool_folder(store: Path, pid: int) -> Path | None:
    found = sorted(Path(f"{store}.proxy-spool").glob(f"{pid}-*"))
    return found[0] if found else None


def _pool(folder: Path | None) -> int:
    """Recorded body files free to be written over (`spool.POOL`): the probe of whether the
    next body goes into pages the page cache holds (a free file there now is taken at the
    request's start) or into new ones."""
    return len(list(folder.glob("free-*.body"))) if folder is not None else 0


async def _until_stored(store: Path, n: int, folder: Path | None) -> None:
    """The paced mode's event: the previous request's record is in the store (or its loss
    logged) and the recorder is done with its spool entry (its body's file handed to the pool), as it is by the time an
    agent sends its next request, after the model's answer and its tool calls."""
    await _until_recorded(store, n)
    end = time.monotonic() + 120.0
    while folder is not None and any(folder.glob("*.json")):
        if time.monotonic() > end:
            raise SystemExit("bench_proxy: a spool entry was never done with")
        await asyncio.sleep(0.005)


async def _latency(
    direct: str,
    proxied: str,
    size: int,
    n: int,
    pid: int,
    store: Path,
    before: int,
    *,
    paced: bool,
) -> dict[str, Any]:
    """p50/p95 of each, the proxy's CPU per proxied request (the figure that the machine's
    other work moves least), and per proxied request whether the spool's pool had a file for
    it. Back to back: each request as soon as the one before is answered. Paced: each proxied
    request once the previous one is recorded (`_until_stored`); `before` proxied requests went
    to this store earlier."""
    out: dict[str, list[float]] = {"d1": [], "dn": [], "p1": [], "pn": []}
    pooled: list[tuple[bool, float, float]] = []  # (a free file, 1st byte, proxy CPU) each
    faults: list[int] = []
    cpu0 = _cpu_ms(pid)
    busy = 0.0  # the proxy's CPU while the bench waits (the recorder's answers it reads)
    folder = _spool_folder(store, pid)
    async with aiohttp.ClientSession() as s:
        for i in range(n + 2):
            raw = _body(size, i)
            # Alternate which goes first, so neither always meets a warm cache.
            order = [("d", direct), ("p", proxied)] if i % 2 else [("p", proxied), ("d", direct)]
            for tag, url in order:
                if tag == "p" and paced:
                    c = _cpu_ms(pid)
                    await _until_stored(store, before + i, folder)
                    busy += _cpu_ms(pid) - c
                free = _pool(folder) if tag == "p" else 0
                c, f = _cpu_ms(pid), _faults(pid)
                a, b = await _one(s, url, raw)
                if tag == "p":
                    folder = folder or _spool_folder(store, pid)
                    if i >= 2:
                        pooled.append((free > 0, a, _cpu_ms(pid) - c))
                        faults.append(_faults(pid) - f)
                if i >= 2:  # two warm-ups
                    out[tag + "1"].append(a)
                    out[tag + "n"].append(b)
    res: dict[str, Any] = {k: (_pct(v, 50), _pct(v, 95)) for k, v in out.items()}
    # Each proxied request less the direct one sent beside it: the machine's drift (its other
    # tenants, the page cache) moves both alike, so their difference varies less than either.
    pairs = [p - d for p, d in zip(out["p1"], out["d1"], strict=True)]
    res["paired"] = (_pct(pairs, 50), _pct(pairs, 95))
    res["cpu"] = (_cpu_ms(pid) - cpu0 - busy) / (n + 2)
    res["pooled"] = pooled
    res["faults"] = statistics.median(faults) if faults else 0
    return res


def _by_pool(r: dict[str, Any]) -> None:
    """The probe's answer: the proxied requests whose body went over a recorded file apart from
    those whose body went into a new one (first byte p50, the proxy's CPU a request)."""
    parts = []
    for free, what in ((True, "over a pooled file"), (False, "into a new file")):
        got = [(a, c) for f, a, c in r["pooled"] if f == free]
        if got:
            first = _pct([a for a, _ in got], 50)
            cpu = sum(c for _, c in got) / len(got)
            parts.append(f"{len(got)} {what}: proxy 1st p50 {first:.1f} ms "
                         f"(added {first - r['d1'][0]:+.1f}), CPU {cpu:.1f} ms")  # fmt: skip
    parts.append(f"proxy page faults {r['faults']:.0f} a request (p50)")
    print(f"{'':>6} {'':<12} {'':>3}  " + "; ".join(parts))


async def _streams(proxied: str, pid: int, n: int) -> tuple[int, int]:
    """Peak RSS over the baseline while `n` slow streams are open at once."""
    base, _ = _rss(pid)
    peak = base
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss(pid)[0])
            await asyncio.sleep(0.01)

    sampler = asyncio.create_task(sample())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        await asyncio.gather(*(_one(s, proxied + "&pace=0.05", _body(10_000, i))
                               for i in range(n)))  # fmt: skip
    done.set()
    await sampler
    return base, peak


async def _bench(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    port_file = tmp / "port"
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)])
    proxy = None
    try:
        while not port_file.exists() or not port_file.read_text():
            await asyncio.sleep(0.02)
        up = f"http://127.0.0.1:{port_file.read_text()}"
        proxy, base = _start_proxy(up, tmp / "store.db")
        direct, proxied = f"{up}/v1/messages?beta=true", f"{base}/v1/messages?beta=true"
        load = os.getloadavg()
        print(f"bench_proxy: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
              f"{os.cpu_count()} cores")  # fmt: skip
        store = tmp / "store.db"
        ok = {mode: True for mode in MODES}
        print(f"{'size':>6} {'mode':<12} {'n':>3}  {'direct 1st p50/p95':>19}  "
              f"{'proxy 1st p50/p95':>18}  {'added 1st p50/p95':>18}  "
              f"{'added last p50/p95':>19}  {'proxy CPU':>9}  {'pool had a file':<15}")  # fmt: skip
        sent = 0
        for label, size, n in (("10 KB", 10_000, args.n), ("1 MB", 1 << 20, args.n),
                               ("10 MB", 10 << 20, max(5, args.n // 4))):  # fmt: skip
            if args.sizes and label.replace(" ", "") not in args.sizes:
                continue
            for mode in MODES:
                r = await _latency(direct, proxied, size, n, proxy.pid, store, sent,
                                   paced=mode == "paced")  # fmt: skip
                sent += n + 2
                add1 = (r["p1"][0] - r["d1"][0], r["p1"][1] - r["d1"][1])
                addn = (r["pn"][0] - r["dn"][0], r["pn"][1] - r["dn"][1])
                had = sum(1 for free, _, _ in r["pooled"] if free)
                print(f"{label:>6} {mode:<12} {n:>3}  {r['d1'][0]:8.1f} / {r['d1'][1]:6.1f} ms  "
                      f"{r['p1'][0]:7.1f} / {r['p1'][1]:6.1f} ms  "
                      f"{add1[0]:+7.1f} / {add1[1]:+6.1f} ms  {addn[0]:+8.1f} / {addn[1]:+6.1f} ms"
                      f"  {r['cpu']:6.1f} ms  {had:>3} of {len(r['pooled'])}")  # fmt: skip
                _by_pool(r)
                print(f"{'':>6} {'':<12} {'':>3}  each proxied request less the direct one beside "
                      f"it, to the first byte: p50 {r['paired'][0]:+.1f} ms, "
                      f"p95 {r['paired'][1]:+.1f} ms")  # fmt: skip
                ok[mode] &= add1[0] <= 5 and add1[1] <= 20
        await _memory(up, tmp)
        await _until_recorded(store, sent)  # all so far
        if lost := _lost(store):
            print(f"{lost} of the {sent} requests above not recorded (dropped by the proxy, the "
                  "spool past its budget while the recorder was behind: the bench's back to "
                  "back 10 MB requests outrun it)")  # fmt: skip
        had = _recorded(store)
        t0 = time.perf_counter()
        base_rss, peak = await _streams(proxied, proxy.pid, 100)
        took = time.perf_counter() - t0
        await _until_recorded(store, had + lost + 100)
        dropped = _lost(store) - lost
        print(f"100 concurrent streams (each about 1.25 s): all answered in {took:.2f} s and "
              f"{'recorded' if not dropped else f'{dropped} not recorded'}; proxy RSS {base_rss / 2**20:.1f} -> {peak / 2**20:.1f} MB, "
              f"{(peak - base_rss) / 100 / 1024:.0f} KB per stream")  # fmt: skip
        for mode in MODES:
            print(f"target (<= 5 ms p50, <= 20 ms p95 added to the first byte), {mode}:",
                  "met" if ok[mode] else "MISSED")  # fmt: skip
        return 0 if all(ok.values()) or not args.strict else 1
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait()
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("-n", type=int, default=40, help="requests per size (10 MB: a quarter)")
    ap.add_argument("--sizes", nargs="*", choices=("10KB", "1MB", "10MB"),
                    help="only these request sizes (default: all three)")  # fmt: skip
    ap.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = ap.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve))
        return 0
    return asyncio.run(_bench(args))


if __name__ == "__main__":
    sys.exit(main())
