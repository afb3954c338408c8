"""The forwarding process keeps a request's freed buffers for the next (`proxy/heap.py`): a 10 MB
body's chunks, churned as the proxy and its spool writer hold them, fault almost no new pages
once the proxy has started; the same churn in a process without it faults a page for nearly
every 4 KB. Measured with the kernel's own count (ru_minflt) in a fresh process each."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc malloc's"
)

# Each "request": 38 chunks of 64-770 KB (as a 10 MB body arrives on a loopback socket), the
# last three alive at once (forwarded, queued for the spool's writer, being written).
CHILD = """
import asyncio, json, random, resource, sys
from pathlib import Path

def request(rnd):
    live = []
    for _ in range(38):
        live.append(b"x" * rnd.randint(65_000, 786_000))
        if len(live) > 3:
            live.pop(0)

async def main(with_proxy, store):
    proxy = None
    if with_proxy:
        from ctxview.proxy.server import Proxy
        proxy = Proxy(Path(store), upstream="http://127.0.0.1:9")
        await proxy.start()
    rnd = random.Random(1)
    for _ in range(3):  # warm-ups: the heap grown to what a request needs
        request(rnd)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        request(rnd)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20
    if proxy is not None:
        await proxy.stop()
    print(json.dumps(faults))

asyncio.run(main(sys.argv[1] == "proxy", sys.argv[2]))
"""


def _faults(tmp_path: Path, with_proxy: bool) -> float:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}  # fmt: skip
    env.pop("GLIBC_TUNABLES", None)
    mode = "proxy" if with_proxy else "bare"
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(tmp_path / "store.db")],
                         env=env, capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_started_proxy_churns_a_10_mb_bodys_chunks_into_pages_it_holds(tmp_path: Path) -> None:
    bare = _faults(tmp_path, with_proxy=False)
    proxied = _faults(tmp_path, with_proxy=True)
    # 10 MB is 2,560 pages: without the thresholds about half of them are new each request.
    assert bare > 500, f"the churn no longer faults without the proxy ({bare:.0f}): re-measure"
    assert proxied < 50, f"{proxied:.0f} page faults a request in the proxy's process"
