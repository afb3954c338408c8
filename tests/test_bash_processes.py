"""Issue 8 point 4, bash: no process outlives its call unless the call asks for it, and the call
returns when the command is done even if a child holds the output. Real processes, found by a
unique token in their command line in /proc."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from engine_helpers import workspace_and_writer

from ctxview.engine.session import Session

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _token() -> str:
    """A sleep duration no other process uses: `sleep 301.<digits>` is found by it."""
    return f"301.{secrets.randbelow(10**9):09d}"


def _alive(token: str) -> list[int]:
    """Processes (not zombies) whose command line holds `token`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmd and state != b"Z" and b"bash_runner" not in cmd:
            found.append(int(name))
    return found


def _gone(token: str, within: float = 10.0) -> bool:
    """Gone within `within` seconds (it returns as soon as they are; the bound is for a loaded
    machine, where a killed process can take a while to be scheduled to exit)."""
    deadline = time.monotonic() + within
    while _alive(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _cleanup(token: str) -> None:
    for pid in _alive(token):  # only what this test started
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


DAEMON = textwrap.dedent("""
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in (0, 1, 2):
                os.close(fd)
            os.execvp("sleep", ["sleep", sys.argv[1]])
        os._exit(0)
    os.wait()
""")


@pytest.mark.parametrize("kind", ["nohup", "setsid", "daemon", "holds_stdout"])
async def test_nothing_the_command_starts_outlives_the_call(tmp_path: Path, kind: str) -> None:
    token = _token()
    command = {
        "nohup": f"nohup sleep {token} >/dev/null 2>&1 & echo started",
        "setsid": f"setsid sleep {token} & echo started",
        "daemon": f"{sys.executable} -c '{DAEMON}' {token}; echo started",
        "holds_stdout": f"sleep {token} & echo started",  # the pipe stays open in the child
    }[kind]
    try:
        async with workspace_and_writer(tmp_path, {}) as (ws, writer):
            session = await Session.start(writer, ws)
            start = time.monotonic()
            shown = await session.run("bash", {"command": command, "timeout": 60})
            took = time.monotonic() - start
            assert shown.startswith("[#1000]\nstarted\n"), shown
            assert took < 30, f"the call waited {took:.1f} s for a child"  # its timeout: 60 s
            assert _gone(token), f"{kind}: still running after the call"
            assert "Ended what the command left running: " in shown
            ended = shown.split("left running: ", 1)[1].split(". To keep", 1)[0].split(", ")
            assert all(ended), shown  # each one named
            if kind != "daemon":  # the daemon may be seen before its exec, as python
                # Ended as what it was then: the sleep, or on a loaded machine the stage before
                # it (bash's child exec'ing setsid or nohup), killed before it got there; a
                # process caught exiting is named by its command alone, `(sleep)`.
                stages = {"(bash)", "(setsid)", "(nohup)", "(sleep)"}
                assert any(f"sleep {token}" in n for n in ended) or set(ended) <= stages, shown
            await session.end()
    finally:
        _cleanup(token)


async def test_the_timeout_kills_everything_even_a_setsid_child(tmp_path: Path) -> None:
    token = _token()
    try:
        async with workspace_and_writer(tmp_path, {}) as (ws, writer):
            session = await Session.start(writer, ws)
            shown = await session.run("bash", {"command": f"setsid sleep {token} & echo up; "
                                                          "sleep 30", "timeout": 3})  # fmt: skip
            # 3 s, not 1: the runner (an interpreter) and bash start slowly on a loaded machine.
            assert shown == "[#1000]\nup\nThe command timed out after 3 s and was stopped."
            assert _gone(token), "the setsid child survived the timeout"
            await session.end()
    finally:
        _cleanup(token)


async def test_background_is_kept_listed_and_ended_with_the_session(tmp_path: Path) -> None:
    token = _token()
    try:
        async with workspace_and_writer(tmp_path, {}) as (ws, writer):
            session = await Session.start(writer, ws)
            start = time.monotonic()
            shown = await session.run("bash", {"command": f"setsid sleep {token} & echo up",
                                               "background": True})  # fmt: skip
            assert time.monotonic() - start < 30
            assert session.last is not None
            data = session.last.data
            [pid] = _alive(token)
            # Its name as seen when bash exited: `sleep …`, or `setsid sleep …` before the exec.
            [entry] = data["background"]
            assert entry["pid"] == pid and f"sleep {token}" in entry["command"]
            assert shown.startswith(
                "[#1000]\nup\nRunning in the background until the session "
                f"ends: {entry['command']} (pid {pid}); its output goes to "
            )
            log = Path(data["log"])
            assert log.read_text() == "up\n"
            time.sleep(0.2)
            assert _alive(token) == [pid], "a background process was not kept"
            # A later call is not held by it, and ends only what it started itself.
            assert await session.run("bash", {"command": "echo next"}) == "[#1001]\nnext\n"
            assert _alive(token) == [pid]
            await session.end()
            assert _gone(token), "the session's end did not end its background processes"
            assert not log.exists()
    finally:
        _cleanup(token)


async def test_background_must_be_a_boolean(tmp_path: Path) -> None:
    async with workspace_and_writer(tmp_path, {}) as (ws, writer):
        session = await Session.start(writer, ws)
        shown = await session.run("bash", {"command": "true", "background": "yes"})
        assert shown == ("[#1000] The call's arguments are wrong: background must be true or "
                         "false.")  # fmt: skip


ENGINE = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from ctxview.engine.session import Session
    from ctxview.store.writer import Writer
    async def main():
        tmp = Path(sys.argv[1])
        async with await Writer.open(tmp / "s.db") as writer:
            session = await Session.start(writer, tmp)
            print(await session.run("bash", {"command": f"sleep {sys.argv[2]} &",
                                             "background": True}), flush=True)
            await asyncio.sleep(60)
    asyncio.run(main())
""")


def test_a_killed_engine_takes_its_background_processes_with_it(tmp_path: Path) -> None:
    token = _token()
    engine = subprocess.Popen([sys.executable, "-c", ENGINE, str(tmp_path), token],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert engine.stdout is not None
        assert engine.stdout.readline() == "[#1000]\n"
        assert engine.stdout.readline().startswith("Running in the background")
        assert _alive(token)
        engine.kill()  # SIGKILL: no cleanup code of the engine runs
        engine.wait()
        assert _gone(token, within=20), "a background process outlived the engine"
    finally:
        engine.kill()
        engine.wait()
        _cleanup(token)


async def test_a_background_call_that_times_out_leaves_no_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    # A temporary folder of this test's own: in the shared /tmp another run's background calls
    # come and go meanwhile.
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    logs = set(Path(tempfile.gettempdir()).glob("ctxview-bash-*.log"))
    assert not logs
    async with workspace_and_writer(tmp_path, {}) as (ws, writer):
        session = await Session.start(writer, ws)
        shown = await session.run("bash", {"command": "echo up; sleep 30", "timeout": 3,
                                           "background": True})  # fmt: skip
        assert shown == "[#1000]\nup\nThe command timed out after 3 s and was stopped."
        await session.end()
    assert set(Path(tempfile.gettempdir()).glob("ctxview-bash-*.log")) == logs


def test_a_process_with_no_command_line_is_named_by_its_command() -> None:
    """A process caught while it exits (its memory gone) has an empty /proc/PID/cmdline: the
    runner named it "" and said `Ended what the command left running: .` (a `setsid` child in
    CI). A zombie has none either; it is named by /proc/PID/comm."""
    from ctxview.tools.bash_runner import _name

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{child.pid}/stat").read_text()
        if stat.rpartition(")")[2].split()[0] == "Z":
            break
        time.sleep(0.01)
    try:
        assert Path(f"/proc/{child.pid}/cmdline").read_bytes() == b""
        assert _name(child.pid) == f"({Path(sys.executable).name[:15]})"
        assert _name(2**22 + 12345) == str(2**22 + 12345)  # no such process: its pid
    finally:
        child.wait()
