"""A tab's app process ends with its server, however the server ends.

textual-serve runs one `ctxview view` per tab and speaks to it through its stdin and stdout. A
server that is killed (or crashes, or is stopped by a supervisor before it has told each tab to
quit) closes the tabs' stdin and nothing else: before `src/ctxview/viewer/served_driver.py`, each tab's app
stayed alive, holding the store open, until somebody killed it by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
from pathlib import Path

import aiohttp
import pytest
from e2e_helpers import GREETING, Served, SmallStore, descendants

pytestmark = pytest.mark.e2e


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie has ended: only its exit status is left)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def open_tab(served: Served, then: asyncio.Future[None]) -> list[int]:
    """Open a tab and keep it open until `then`; the pids of the processes serve started for it,
    taken once the app has drawn its first screen."""
    async with aiohttp.ClientSession() as http:
        status_url = f"{served.url}&width=100&height=30"
        async with http.get(status_url) as page:
            body = await page.text()
        found = re.search(r'data-session-websocket-url="([^"]+)"', body)
        assert found, body
        async with http.ws_connect(f"{found.group(1)}?width=100&height=30",
                                   origin=served.base) as ws:  # fmt: skip
            seen, end = b"", time.monotonic() + 60
            while time.monotonic() < end and GREETING.encode() not in seen:
                try:
                    msg = await ws.receive(timeout=1)
                except TimeoutError:
                    continue
                if msg.type != aiohttp.WSMsgType.BINARY:
                    break
                seen += msg.data
            assert GREETING.encode() in seen, "the tab's app never drew its screen"
            pids = [p for p in descendants(served.proc.pid) if running(p)]
            then.set_result(None)
            with contextlib.suppress(TimeoutError, aiohttp.ClientError):
                await ws.receive(timeout=30)  # the server's end closes it
            return pids


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_tabs_app_ends_when_its_server_ends(small_store: SmallStore, how: int) -> None:
    with Served("--store", str(small_store.path), "serve",
                "--session", small_store.session_id) as served:  # fmt: skip

        async def go() -> list[int]:
            opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            tab = asyncio.create_task(open_tab(served, opened))
            await asyncio.wait_for(asyncio.shield(opened), 90)
            served.proc.send_signal(how)
            return await tab

        pids = asyncio.run(go())
        assert pids, "no app process was seen for the tab"
        served.proc.wait(timeout=60)
        end = time.monotonic() + 30  # only a tab that never ends takes this long
        while time.monotonic() < end and any(running(p) for p in pids):
            time.sleep(0.05)
        left = [p for p in pids if running(p)]
        commands = {p: Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ") for p in left}
        assert not left, f"left running after serve ended: {commands}"
