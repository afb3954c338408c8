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
    output: bytes
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
    chunks: list[bytes] = []

    async def pump() -> None:
        assert proc.stdout is not None
        while data := await proc.stdout.read(1 << 16):
            chunks.append(data)

    try:
        await asyncio.wait_for(asyncio.gather(pump(), proc.wait()), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return CommandOutput(b"".join(chunks), None, True)
    return CommandOutput(b"".join(chunks), proc.returncode, False)
