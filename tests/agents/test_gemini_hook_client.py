"""Gemini's bash hook client (`agents/gemini/hook_client.sh`), run by the real bash as Gemini
runs a hook (`bash -c COMMAND`, the hook input on stdin) against the real resident engine: the
answer it prints is the Python client's, over http; on any trouble it hands the call to the
Python client (no endpoint, a strange one, the engine down, a wrong secret), or, once the
engine took the request, records the failure and prints nothing; it never hangs."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxview.agents import endpoint, failures, hook_trace
from ctxview.agents.gemini import install
from ctxview.agents.hook_client import stop
from tests.agents.gemini_helpers import env

TEXT = "".join(f"ligne {i}: café, 数据, 🙂\n" for i in range(40))  # bytes != characters
LIMIT = 15.0  # seconds a hook may take here, at most (Gemini's own timeout is 5)


class Hooks:
    def __init__(self, tmp: Path) -> None:
        self.environ = env(tmp, "")
        self.store = Path(self.environ["CTXVIEW_STORE"])
        self.bash = install.hook_command(self.store, sys.executable)
        self.python = install.python_command(self.store, sys.executable)
        self.calls = 0

    def payload(self, session: str = "s1", name: str = "") -> bytes:
        self.calls += 1
        return json.dumps({"session_id": session, "hook_event_name": "AfterTool",
                           "tool_name": "read_file", "cwd": "/p", "timestamp": "",
                           "tool_input": {"file_path": f"/p/{name or self.calls}.txt"},
                           "tool_response": {"llmContent": TEXT, "returnDisplay": ""}},
                          ensure_ascii=False).encode()  # fmt: skip

    def run(self, command: str, payload: bytes, **extra: str) -> bytes:
        done = subprocess.run(["bash", "-c", command], input=payload, capture_output=True,
                              env={**self.environ, **extra}, timeout=LIMIT, check=False)  # fmt: skip
        assert done.returncode == 0 and done.stderr == b"", done
        return done.stdout

    def transports(self) -> list[str]:
        """How each hook reached the engine, in order (the engine saves its traces as it
        stops)."""
        stop(self.store)
        return [t["transport"] for t in hook_trace.read(self.store)]


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[Hooks]:
    h = Hooks(tmp_path)
    endpoint.ensure(h.store)
    try:
        yield h
    finally:
        stop(h.store)


def _shown(answer: bytes) -> str:
    """The rules' text of an AfterTool answer, its ids and the call's random ref taken out."""
    request = json.loads(answer)["hookSpecificOutput"]["tailToolCallRequest"]
    assert request["name"] == "mcp_ctxview_show" and request["args"]["ref"], request
    return re.sub(r"#\w{4}\b", "#ID", request["args"]["text"])


def test_the_answer_is_the_python_clients_over_http(hooks: Hooks) -> None:
    """The same calls in two sessions, one through each client: the same answers (but for the
    ids and refs, random), the non-ASCII text intact (its length in bytes); the first call started the engine through
    the Python client, the bash client's went over http."""
    py = [hooks.run(hooks.python, hooks.payload("py", "a")) for _ in range(2)]
    sh = [hooks.run(hooks.bash, hooks.payload("sh", "a")) for _ in range(2)]
    assert [_shown(a) for a in sh] == [_shown(a) for a in py]
    assert "Unchanged since" in _shown(sh[1])  # the re-read's stub
    assert "café, 数据, 🙂" in _shown(sh[0])
    # The tail call itself: no answer from either (the engine's `{}` prints nothing).
    tail = json.dumps({"session_id": "sh", "hook_event_name": "AfterTool",
                       "tool_name": "mcp_ctxview_show"}).encode()  # fmt: skip
    assert hooks.run(hooks.bash, tail) == b"" == hooks.run(hooks.python, tail)
    assert hooks.transports() == ["command", "command", "http", "http", "http", "command"]


def test_engine_down_starts_it_through_the_python_client(hooks: Hooks) -> None:
    assert "tailToolCallRequest" in hooks.run(hooks.bash, hooks.payload()).decode()
    assert "tailToolCallRequest" in hooks.run(hooks.bash, hooks.payload()).decode()
    assert hooks.transports() == ["command", "http"]


def _hostile(path: Path, kind: str) -> None:
    good = path.read_bytes()
    path.unlink()
    if kind == "missing":
        return
    if kind == "fifo":
        os.mkfifo(path, 0o600)  # nobody writes it: a plain read would block for ever
    elif kind == "link":
        real = path.with_name("elsewhere.json")
        real.write_bytes(good)
        path.symlink_to(real)
    elif kind == "link-to-zero":
        path.symlink_to("/dev/zero")
    elif kind == "huge":
        path.write_bytes(good[:-1] + b" " * (16 << 20) + b"}")  # valid JSON, 16 MB
    elif kind == "garbage":
        path.write_bytes(b'{"port": 99999, "secret": "$(touch pwned)"}')


@pytest.mark.parametrize("kind", ["missing", "fifo", "link", "link-to-zero", "huge", "garbage"])
def test_a_strange_endpoint_file_hands_the_call_to_the_python_client(hooks: Hooks,
                                                                     kind: str) -> None:  # fmt: skip
    hooks.run(hooks.bash, hooks.payload())  # the engine started (by the Python client)
    _hostile(endpoint.path(hooks.store), kind)
    began = time.monotonic()
    answer = hooks.run(hooks.bash, hooks.payload())
    assert time.monotonic() - began < LIMIT
    assert "tailToolCallRequest" in answer.decode()
    assert hooks.transports() == ["command", "command"]
    assert not Path("pwned").exists() and not (hooks.store.parent / "pwned").exists()


def test_a_wrong_secret_hands_the_call_to_the_python_client(hooks: Hooks) -> None:
    hooks.run(hooks.bash, hooks.payload())
    path = endpoint.path(hooks.store)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({"port": data["port"], "secret": "0" * 64}))
    answer = hooks.run(hooks.bash, hooks.payload())
    assert "tailToolCallRequest" in answer.decode()
    assert hooks.transports() == ["command", "command"]  # the http request was refused
    assert any("without ctxview's hook secret" in r["error"] for r in failures.read(hooks.store))


class _FakeEngine:
    """Something on the endpoint's port in the engine's place, answering `reply` (or nothing,
    holding the connection), to see what the client does with an answer it cannot use."""

    def __init__(self, port: int, reply: bytes | None, *, reset: bool = False,
                 rcvbuf: int | None = None) -> None:  # fmt: skip
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rcvbuf is not None:  # before listen: the connections it accepts take it
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind((endpoint.LOOPBACK, port))
        self.sock.listen()
        self.reply = reply
        self.reset = reset  # the connection reset after the reply, not closed
        self.requests: list[bytes] = []
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(1 << 16)
            self.requests.append(data)
            if self.reply is not None:  # the whole request read first: it was taken
                head, _, body = data.partition(b"\r\n\r\n")
                length = re.search(rb"Content-Length: (\d+)", head)
                size = int(length.group(1)) if length else 0
                while len(body) < size:
                    body += conn.recv(1 << 16)
            if self.reply is None:
                self.release.wait(LIMIT)
            else:
                conn.sendall(self.reply)
            if self.reset:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self) -> None:
        self.release.set()
        self.thread.join(LIMIT)
        self.sock.close()


CUT = b'HTTP/1.1 200 OK\r\nContent-Length: 900\r\n\r\n{"cut'


@pytest.mark.parametrize(("reply", "reset"), [(CUT, False), (CUT, True), (b"", False),
                                              (None, False)],
                         ids=["cut", "cut-then-reset", "closed", "silent"])  # fmt: skip
def test_an_answer_it_cannot_use_is_recorded_not_asked_again(hooks: Hooks, reply: bytes | None,
                                                             reset: bool) -> None:  # fmt: skip
    """Cut short (then the connection reset rather than closed), the connection closed with no
    answer, or none in time: the engine may have stored the call, so it is not asked again;
    the failure is recorded, nothing printed, not even bash's own complaint on stderr."""
    ep = endpoint.load(hooks.store)
    assert ep is not None
    fake = _FakeEngine(ep.port, reply, reset=reset)
    try:
        began = time.monotonic()
        assert hooks.run(hooks.bash, hooks.payload()) == b""
        took = time.monotonic() - began
    finally:
        fake.close()
    assert len(fake.requests) == 1 and f"X-Ctxview-Secret: {ep.secret}" in fake.requests[0].decode()
    assert took < 4.0  # the client's 2 s budget and a Python start
    [record] = failures.read(hooks.store)
    assert record["event"] == "AfterTool" and record["tool_name"] == "read_file", record
    why = {b"": "closed it unanswered", None: "did not answer in 1.8 s"}.get(reply, "cut short")
    if reset:  # the reset may come before the answer is read: then nothing of it is
        assert "cut short" in record["error"] or "closed it unanswered" in record["error"]
    else:
        assert why in record["error"], record


def test_the_secret_is_on_no_command_line(hooks: Hooks) -> None:
    ep = endpoint.load(hooks.store)
    assert ep is not None and ep.secret not in hooks.bash
    settings = install.before_model_command(hooks.store, sys.executable)
    assert ep.secret not in settings


def test_an_engine_started_before_the_endpoint_listens_once_it_is_made(tmp_path: Path) -> None:
    """An install after the engine started (or an older install's store): the engine takes the
    endpoint up by itself, so the bash client is not a Python process per call until it
    restarts."""
    h = Hooks(tmp_path)
    try:
        h.run(h.bash, h.payload())  # no endpoint: the Python client, which starts the engine
        ep = endpoint.ensure(h.store)
        deadline = time.monotonic() + LIMIT
        while endpoint.listener_uid(ep.port) is None:  # the engine looks every 2 s
            assert time.monotonic() < deadline, "the engine never listened"
            time.sleep(0.05)
        h.run(h.bash, h.payload())
        assert h.transports() == ["command", "http"]
    finally:
        stop(h.store)


def test_a_large_input_to_an_engine_that_reads_nothing_does_not_hang(hooks: Hooks) -> None:
    """Hook input larger than the socket holds unread (9 MB here), to an engine that has stopped
    reading: the write is cut off after the budget, recorded, and nothing printed."""
    ep = endpoint.load(hooks.store)
    assert ep is not None
    # It reads the request's head only, into a small buffer; the input is more than that and
    # the client's largest send buffer (tcp_wmem's maximum) hold, whatever the kernel's limits.
    fake = _FakeEngine(ep.port, None, rcvbuf=64 << 10)
    wmem = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    big = json.loads(hooks.payload())
    big["tool_response"]["llmContent"] = "x" * max(4 << 20, 2 * wmem + (1 << 20))
    try:
        began = time.monotonic()
        assert hooks.run(hooks.bash, json.dumps(big).encode()) == b""
        took = time.monotonic() - began
    finally:
        fake.close()
    assert took < 4.0
    [record] = failures.read(hooks.store)
    assert "did not take the request over http in 1.8 s" in record["error"], record


def test_a_large_input_goes_over_http(hooks: Hooks) -> None:
    """1.6 MB each way, through the watchdog of a large write."""
    hooks.run(hooks.bash, hooks.payload())  # the engine started
    big = json.loads(hooks.payload())
    big["tool_response"]["llmContent"] = "".join(f"{i} é\n" for i in range(200_000))  # 1.6 MB
    answer = hooks.run(hooks.bash, json.dumps(big, ensure_ascii=False).encode())
    assert _shown(answer).endswith("\n200000: 199999 é")  # a read is not capped: all of it back
    assert hooks.transports() == ["command", "http"]
    assert failures.read(hooks.store) == []


def test_a_fifo_where_the_endpoint_goes_stalls_no_one(tmp_path: Path) -> None:
    """An engine with no endpoint looks for one every 2 s; a FIFO put where it goes (nobody
    writes it) must not block that look, which runs on the loop that answers every hook."""
    h = Hooks(tmp_path)
    try:
        assert "tailToolCallRequest" in h.run(h.python, h.payload()).decode()  # the engine up
        os.mkfifo(endpoint.path(h.store), 0o600)
        made = time.monotonic()
        while time.monotonic() - made < 6.0:  # three of the engine's looks, a hook in each
            began = time.monotonic()
            assert "tailToolCallRequest" in h.run(h.python, h.payload()).decode()
            assert time.monotonic() - began < 4.0
            time.sleep(0.5)
        assert failures.read(h.store) == []
    finally:
        stop(h.store)


def _listener_pid(port: int) -> int:
    """The process listening on 127.0.0.1:`port` (the socket's inode in /proc/net/tcp, then
    the process holding it)."""
    with open("/proc/net/tcp", encoding="ascii") as f:
        inode = next(fields[9] for line in f if len(fields := line.split()) > 9
                     and fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A")  # fmt: skip
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) == f"socket:[{inode}]":
                return int(fd.parts[2])
        except OSError:
            continue
    raise LookupError(f"nothing holds the socket listening on {port}")


def test_hooks_queued_at_an_engine_held_up_each_end_within_the_budget(hooks: Hooks) -> None:
    """The engine held up (stopped here, as a long step or a checkpoint would) while 200 hook
    processes of many sessions connect: each waits its turn in the engine's accept queue, so
    the next one ends in its own budget with the failure recorded, rather than waiting out the
    kernel's retries of a connect to a full queue (1 s, 3 s, 7 s... when that queue held 100)."""
    import signal

    hooks.run(hooks.bash, hooks.payload())  # the engine up, listening on the endpoint
    ep = endpoint.load(hooks.store)
    assert ep is not None
    engine = _listener_pid(ep.port)
    with open(f"/proc/{engine}/stat", "rb") as f:
        supervisor = int(f.read().rsplit(b")", 1)[1].split()[1])
    held = [engine, supervisor]
    waiting: list[socket.socket] = []
    for pid in held:
        os.kill(pid, signal.SIGSTOP)
    try:
        for _ in range(200):  # connects the kernel completes into the queue, never accepted
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((endpoint.LOOPBACK, ep.port))
            waiting.append(s)
        began = time.monotonic()
        assert hooks.run(hooks.bash, hooks.payload()) == b""
        took = time.monotonic() - began
    finally:
        for s in waiting:
            s.close()
        for pid in held:
            os.kill(pid, signal.SIGCONT)
    assert took < 4.0, took  # the client's 1.8 s budget and a Python start
    [record] = failures.read(hooks.store)
    assert "did not answer in 1.8 s" in record["error"], record


def test_a_store_removed_while_the_engine_runs_gets_the_next_calls(hooks: Hooks) -> None:
    """A person starts afresh (the store's files removed) while the engine is up: the next
    call lands in the new store at the path, not in the removed one the engine still held."""
    assert "tailToolCallRequest" in hooks.run(hooks.bash, hooks.payload("before")).decode()
    for extra in ("", "-wal", "-shm"):
        Path(f"{hooks.store}{extra}").unlink(missing_ok=True)
    assert "tailToolCallRequest" in hooks.run(hooks.bash, hooks.payload("after")).decode()
    stop(hooks.store)
    with sqlite3.connect(hooks.store) as db:
        rows = db.execute("SELECT session, count(*) FROM events WHERE kind = 'result' "
                          "GROUP BY session").fetchall()  # fmt: skip
    assert rows == [("gm-after", 1)], rows
