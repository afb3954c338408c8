"""bash: a command in the workspace, stdout and stderr together, stopped at its timeout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path


@dataclass
class CommandOutput:
    output: bytes | bytearray
    exit_code: int | None  # None when it timed out
    timed_out: bool


async def run(command: str, cwd: Path, timeout: float) -> CommandOutput:
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # its own process group, so a timeout stops its children too
    )  # fmt: skip
    # One growing buffer, not a list joined at the end: a 200 MB output is held once, not twice.
    output = bytearray()

    async def pump() -> None:
        assert proc.stdout is not None
        while data := await proc.stdout.read(1 << 20):
            output.extend(data)

    try:
        await asyncio.wait_for(asyncio.gather(pump(), proc.wait()), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return CommandOutput(output, None, True)
    return CommandOutput(output, proc.returncode, False)
