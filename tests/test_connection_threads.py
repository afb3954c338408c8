"""A store connection that is never closed (a task cancelled while it opened, a view that went
while its loader opened one, a ^C) must not keep the process alive: aiosqlite's worker thread
was not a daemon, and one left open hung `ctxview` and pytest at exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

LEFT_OPEN = textwrap.dedent("""
    import asyncio, sys
    from ctxview.store import Reader, Writer

    KEPT = []  # held, as a view holds its loader's reader: never collected, never closed

    async def main(path):
        KEPT.append(await Writer.open(path))
        KEPT.append(await Reader.open(path))
        task = asyncio.ensure_future(Reader.open(path))
        await asyncio.sleep(0)
        task.cancel()                         # cancelled while it connects
        try:
            await task
        except asyncio.CancelledError:
            pass
        print("done", flush=True)

    asyncio.run(main(sys.argv[1]))
""")


def test_a_process_with_connections_left_open_still_exits(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", LEFT_OPEN, str(tmp_path / "s.db")],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert "Traceback" not in out.stderr, out.stderr
