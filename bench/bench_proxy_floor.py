"""The floor under `ctxview proxy`'s added latency on this machine: a bare relay beside it.

The relay (`--relay`, below) is the least a proxy in Python can do: it reads a request's
headers, forwards them and then the body as it comes in (`sock_recv` and `sock_sendall`, one
connection to the upstream kept per client connection), and the answer back until its last
chunk. It parses no body, records nothing, checks no secret. Three paths to the scripted server
of `bench_proxy.py`, in turn for every request, each round in another order: direct, through
the relay, through the real `ctxview proxy` (recording into a temporary store). Each proxied
request waits until the one before it is recorded, as `bench_proxy.py`'s paced mode does.

For each path: first-byte p50/p95, and for the relay and the proxy the added latency, as the
difference of their p50 and the direct one, and as the p50/p95 of each request less the direct
one of its round. Also each process's CPU a request."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_proxy as bp

HEAD_END = b"\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"  # the scripted server's answers are chunked


async def _relay_one(loop: asyncio.AbstractEventLoop, c: socket.socket, u: socket.socket) -> bool:
    """One request and its answer; False once the client closed."""
    buf = b""
    while HEAD_END not in buf:
        d = await loop.sock_recv(c, 1 << 16)
        if not d:
            return False
        buf += d
    head, _, rest = buf.partition(HEAD_END)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await loop.sock_sendall(u, head + HEAD_END + rest)
    left = length - len(rest)
    while left > 0:
        d = await loop.sock_recv(c, min(left, 1 << 20))
        if not d:
            return False
        left -= len(d)
        await loop.sock_sendall(u, d)
    answer = b""
    while HEAD_END not in answer:
        d = await loop.sock_recv(u, 1 << 16)
        answer += d
        await loop.sock_sendall(c, d)
    tail = answer.partition(HEAD_END)[2]
    while not tail.endswith(LAST_CHUNK):
        d = await loop.sock_recv(u, 1 << 16)
        tail = (tail + d)[-len(LAST_CHUNK) :]
        await loop.sock_sendall(c, d)
    return True


async def _relay(upstream_port: int, port_file: str) -> None:
    loop = asyncio.get_running_loop()

    async def serve(c: socket.socket) -> None:
        u = socket.socket()
        u.setblocking(False)
        await loop.sock_connect(u, ("127.0.0.1", upstream_port))
        try:
            while await _relay_one(loop, c, u):
                pass
        finally:
            u.close()
            c.close()

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    s.setblocking(False)
    Path(port_file).write_text(str(s.getsockname()[1]))
    tasks = set()
    while True:
        c, _ = await loop.sock_accept(s)
        c.setblocking(False)
        t = loop.create_task(serve(c))
        tasks.add(t)
        t.add_done_callback(tasks.discard)


async def _port(path: Path) -> int:
    while not path.exists() or not path.read_text():
        await asyncio.sleep(0.02)
    return int(path.read_text())


async def _bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-floor-"))
    server = subprocess.Popen([sys.executable, bp.__file__, "--serve", str(tmp / "up")])
    relay = None
    proxies: list[subprocess.Popen[str]] = []
    try:
        up = await _port(tmp / "up")
        relay = subprocess.Popen([sys.executable, __file__, "--relay", str(up), str(tmp / "relay")])
        relay_port = await _port(tmp / "relay")
        urls = {"direct": f"http://127.0.0.1:{up}/v1/messages?beta=true",
                "relay": f"http://127.0.0.1:{relay_port}/v1/messages?beta=true"}  # fmt: skip
        pids = {"relay": relay.pid}
        stores: dict[str, Path] = {}
        # The proxy of this checkout, and one from each other source tree named (`--also`).
        for i, src in enumerate([None, *args.also]):
            name = "proxy" if src is None else f"proxy{i}"
            env_before = os.environ.get("PYTHONPATH")
            if src is not None:
                os.environ["PYTHONPATH"] = src
            try:
                proxy, base = bp._start_proxy(f"http://127.0.0.1:{up}", tmp / f"{name}.db")
            finally:
                if env_before is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = env_before
            proxies.append(proxy)
            urls[name] = f"{base}/v1/messages?beta=true"
            pids[name] = proxy.pid
            stores[name] = tmp / f"{name}.db"
            if src is not None:
                print(f"{name}: the proxy of {src}")
        load = os.getloadavg()
        print(f"bench_proxy_floor: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
              f"{os.cpu_count()} cores; {args.n} rounds of {args.megabytes} MB requests")  # fmt: skip
        first: dict[str, list[float]] = {k: [] for k in urls}
        cpu = dict.fromkeys(pids, 0.0)
        folders: dict[str, Path | None] = dict.fromkeys(stores)
        sent = dict.fromkeys(stores, 0)
        names = list(urls)
        async with aiohttp.ClientSession() as s:
            for i in range(args.n + 2):
                raw = bp._body(args.megabytes << 20, i)
                k = i % len(names)  # each round in another order
                for path in names[k:] + names[:k]:
                    # Every request on a machine at rest: no recorder still at work on an
                    # earlier proxied request (~200 ms of CPU for 10 MB), whichever path is next.
                    for name, store in stores.items():
                        await bp._until_stored(store, sent[name], folders[name])
                    c = bp._cpu_ms(pids[path]) if path in pids else 0.0
                    a, _ = await bp._one(s, urls[path], raw)
                    if path in sent:
                        sent[path] += 1
                    if path in pids and i >= 2:
                        cpu[path] += bp._cpu_ms(pids[path]) - c
                    if path in stores:
                        folders[path] = folders[path] or bp._spool_folder(stores[path],
                                                                          pids[path])  # fmt: skip
                    if i >= 2:  # two warm-ups
                        first[path].append(a)
        d50 = statistics.median(first["direct"])
        print(f"{'path':<7} {'1st p50/p95':>17}  {'added (p50s)':>12}  "
              f"{'each less its direct p50/p95':>28}  {'CPU a request':>13}")  # fmt: skip
        for path, got in first.items():
            p50, p95 = bp._pct(got, 50), bp._pct(got, 95)
            if path == "direct":
                print(f"{path:<7} {p50:7.1f} / {p95:5.1f} ms")
                continue
            pairs = [a - b for a, b in zip(got, first["direct"], strict=True)]
            print(f"{path:<7} {p50:7.1f} / {p95:5.1f} ms  {p50 - d50:+9.1f} ms  "
                  f"{bp._pct(pairs, 50):+14.1f} / {bp._pct(pairs, 95):+6.1f} ms  "
                  f"{cpu[path] / args.n:10.1f} ms")  # fmt: skip
    finally:
        for p in (*proxies, relay, server):
            if p is not None:
                p.terminate()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--relay", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("-n", type=int, default=100, help="rounds (each: one request per path)")
    ap.add_argument("--megabytes", type=int, default=10, help="request size (default 10)")
    ap.add_argument("--also", action="append", default=[], metavar="SRC",
                    help="also the proxy of this source tree (its `src`), in the same rounds")  # fmt: skip
    args = ap.parse_args()
    if args.relay:
        asyncio.run(_relay(int(args.relay[0]), args.relay[1]))
        return 0
    asyncio.run(_bench(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
