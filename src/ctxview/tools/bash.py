"""bash: a command in the workspace, stdout and stderr together, stopped at its timeout.

No process outlives its call unless the call asks for it: the command runs under
`bash_runner.py`, a subreaper that every process the command starts stays below (see there
why). The call returns when bash itself exits: what it left running is killed and named, so a
`sleep 300 &` holding the output open does not hold the call; with `background` it is left
running instead, its output going to a log file, and listed; the session ends it (`Job.stop`).
A timeout kills everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUNNER = str(Path(__file__).with_name("bash_runner.py"))
DRAIN_SECONDS = 0.5  # after the command is done, for output still in the pipe
STOP_SECONDS = 5.0  # for the runner to kill what is below it


@dataclass
class Job:
    """A background call's runner, their reaper, kept until the session ends."""

    proc: asyncio.subprocess.Process
    group: int | None
    processes: list[tuple[int, str]]
    log: str

    async def stop(self) -> None:
        """End every process of the call (the runner kills them all), and remove the log."""
        await _stop(self.proc, self.group)
        with contextlib.suppress(OSError):
            os.unlink(self.log)


@dataclass
class CommandOutput:
    output: bytes | bytearray
    exit_code: int | None  # None when it timed out
    timed_out: bool
    ended: list[str] = field(default_factory=list)  # what the command left running, killed
    job: Job | None = None  # background: what is still running


async def run(command: str, cwd: Path, timeout: float, background: bool = False) -> CommandOutput:
    log = ""
    if background:
        fd, log = tempfile.mkstemp(prefix="ctxview-bash-", suffix=".log")
        os.close(fd)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", RUNNER, "bg" if background else "fg", log, str(os.getpid()),
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,  # the runner's messages
        start_new_session=True,
    )  # fmt: skip
    # One growing buffer, not a list joined at the end: a 200 MB output is held once, not twice.
    output = bytearray()

    async def pump() -> None:
        assert proc.stdout is not None
        while data := await proc.stdout.read(1 << 20):
            output.extend(data)

    said: dict[str, Any] = {}  # the runner's JSON lines, merged

    async def listen() -> None:
        """The runner's messages, until the one that says the command is done."""
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            with contextlib.suppress(ValueError):
                said.update(json.loads(line))
            if "exit" in said or "stopped" in said:
                return

    pumping = asyncio.ensure_future(pump())
    timed_out = False
    try:
        await asyncio.wait_for(listen(), timeout)
    except TimeoutError:
        timed_out = True
        await _stop(proc, _group(said))
    except BaseException:  # cancelled: nothing of the call is left behind
        await _stop(proc, _group(said))
        pumping.cancel()
        raise
    # Done: what is left in the pipe comes at once (fg: the runner killed all that held it).
    try:
        await asyncio.wait_for(asyncio.shield(pumping), DRAIN_SECONDS)
    except TimeoutError:
        pumping.cancel()
    if "exit" not in said:  # the runner died (or was stopped): its command's group with it
        await _stop(proc, _group(said))
        if log:  # a background call's output went to its log: keep it, leave no file behind
            _take_log(log, output)
        return CommandOutput(output, None if timed_out else -1, timed_out)
    running = [(int(p), str(n)) for p, n in said.get("background", [])]
    job = None
    if running:
        job = Job(proc, _group(said), running, log)
        with open(log, "rb") as f:
            output.extend(f.read())
    else:
        await proc.wait()
        if background:
            _take_log(log, output)
    code = said["exit"]
    ended = [str(n) for n in said.get("ended", [])]
    return CommandOutput(output, int(code), False, ended, job)


def _take_log(log: str, output: bytearray) -> None:
    with contextlib.suppress(OSError):
        with open(log, "rb") as f:
            output.extend(f.read())
        os.unlink(log)


def _group(said: dict[str, object]) -> int | None:
    pid = said.get("pid")
    return pid if isinstance(pid, int) else None


async def _stop(proc: asyncio.subprocess.Process, group: int | None) -> None:
    """Ask the runner to kill everything below it (SIGTERM). Only if it cannot (it does not
    answer, or it died killed) are it and the command's process group killed from here: all
    that can be reached without it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), STOP_SECONDS)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    if proc.returncode != 0 and group:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
