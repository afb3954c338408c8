"""A real PostgreSQL 15 cluster of a test's own: initdb and pg_ctl (as the `postgres` user when
the tests run as root, which postgres refuses) in a temporary folder, on a loopback port, with
password authentication so a wrong password can be tried. Stopped after."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN = Path("/usr/lib/postgresql/15/bin")
PASSWORD = "s3cret-pw"


def available() -> str | None:
    """Why the cluster cannot start here, or None."""
    if not (BIN / "initdb").exists():
        return "PostgreSQL 15 is not installed (.ci/run installs postgresql-15)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run the server"
    return None


# What the sync test modules share: their skip, a cluster per module and a database per test.
needs_postgres = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running() as c:
        yield c


@pytest.fixture
def url(cluster: Cluster) -> str:
    return new_db(cluster)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    folder: Path
    port: int

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, db: str = "ctxview", password: str = PASSWORD) -> str:
        return f"postgresql://postgres:{password}@127.0.0.1:{self.port}/{db}"

    def _as_postgres(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        full = [str(c) for c in cmd]
        if os.geteuid() == 0:
            full = ["runuser", "-u", "postgres", "--", *full]
        return subprocess.run(full, check=check, capture_output=True, text=True, timeout=60)

    def start(self) -> None:
        self._as_postgres(
            BIN / "pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-w",
            "-t", "30", "-o", f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1",
            "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(BIN / "pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop",
                          check=False)  # fmt: skip

    def cpu_seconds(self) -> float:
        """The CPU time the server's processes have used so far, live and ended (bench)."""
        tick = os.sysconf("SC_CLK_TCK")
        main = int((self.data / "postmaster.pid").read_text().split()[0])
        total = 0
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(proc.name) == main:  # its own and its ended children's
                total += sum(int(x) for x in stat[11:15])
            elif int(stat[1]) == main:
                total += int(stat[11]) + int(stat[12])
        return total / tick

    def sql(self, statement: str, db: str = "postgres") -> str:
        out = self._as_postgres(
            BIN / "psql",
            "-h", str(self.folder), "-p", str(self.port), "-U", "postgres", "-d", db,
            "-At", "-c", statement,
        )  # fmt: skip
        return out.stdout


@contextmanager
def running() -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix="ctxview-pg-"))
    try:
        os.chmod(folder, 0o755)
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        c = Cluster(folder, _free_port())
        pw = folder / "pw"
        pw.write_text(PASSWORD + "\n")
        if os.geteuid() == 0:
            shutil.chown(pw, "postgres", "postgres")
        c._as_postgres(
            BIN / "initdb", "-D", str(c.data), "-U", "postgres", "--pwfile", str(pw),
            "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        with open(c.data / "postgresql.conf", "a") as conf:
            conf.write("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
        c.start()
        try:
            c.sql("CREATE DATABASE ctxview")
            yield c
        finally:
            c.stop("immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# Stores of known content, written by the real Writer, and their rows to compare.

LIVE_WRITER = r"""
import asyncio, sys, time
from ctxview.store.writer import Writer
from ctxview.store.records import Event, Body

async def main(path, sid, n, rate, size):
    async with await Writer.open(path) as w:
        if await w.session_info(sid) is None:
            await w.create_session(sid, title="live " + sid, next_rid=1)
        start = await w.last_seq(sid) // 2
        for i in range(start, start + n):
            t = time.time()
            text = f"result {i} of {sid} " + ("x" * size) + "\n"
            await w.append(sid, [
                Event(ts=t, kind="call", tool="read", call_ref=f"c{i}", args='{"path": "f"}'),
                Event(ts=t, kind="result", tool="read", call_ref=f"c{i}", rid=i + 1,
                      rkind="full", shown_chars=len(text), stored_chars=len(text)),
            ], [Body(i + 1, text, text)])
            print(f"{i + 1} {t!r}", flush=True)
            if rate:
                await asyncio.sleep(1 / rate)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]),
                 int(sys.argv[5])))
"""


def write_live(path: Path, sid: str, n: int, rate: float = 0, size: int = 200,
               **kw: object) -> subprocess.Popen[str]:  # fmt: skip
    """A process appending `n` results (a call and its result each) to session `sid`, `rate`
    per second (0: as fast as it can); it prints each result's id and commit time."""
    import sys

    return subprocess.Popen([sys.executable, "-c", LIVE_WRITER, str(path), sid, str(n), str(rate),
                             str(size)], stdout=subprocess.PIPE, text=True, **kw)  # type: ignore[call-overload]  # fmt: skip


def rows(path: Path, machine_free: bool = True) -> dict[str, object]:
    """Every session's fields (the machine taken out of a pulled one's data), events and bodies;
    none for a store that a pull has made but not yet given its tables (a poll can look then)."""
    import json
    import sqlite3

    from ctxview.store.records import EVENT_COLUMNS

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sessions = {}
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'bodies'").fetchone():
            return {"sessions": sessions, "events": [], "bodies": []}
        for r in conn.execute("SELECT id, title, workspace, source, started, ended, next_rid, data "
                              "FROM sessions"):  # fmt: skip
            data = json.loads(r[7] or "{}")
            if machine_free:
                data.pop("machine", None)
            sessions[r[0]] = (*r[1:7], data)
        events = conn.execute(f"SELECT session, seq, {', '.join(EVENT_COLUMNS)} FROM events "
                              "ORDER BY session, seq").fetchall()  # fmt: skip
        bodies = conn.execute("SELECT session, rid, shown, CAST(stored AS TEXT) FROM bodies "
                              "ORDER BY session, rid").fetchall()  # fmt: skip
        return {"sessions": sessions, "events": events, "bodies": bodies}
    finally:
        conn.close()


def remote_rows(url: str, machine: str) -> dict[str, object]:
    import psycopg

    from ctxview.store.records import EVENT_COLUMNS

    with psycopg.connect(url) as conn:
        events = conn.execute(f"SELECT session, seq, {', '.join(EVENT_COLUMNS)} FROM "
                              "ctxview_events WHERE machine = %s ORDER BY session, seq",
                              (machine,)).fetchall()  # fmt: skip
        bodies = [(s, r, bytes(a).decode(), bytes(b).decode()) for s, r, a, b in conn.execute(
            "SELECT session, rid, shown, stored FROM ctxview_bodies WHERE machine = %s "
            "ORDER BY session, rid", (machine,))]  # fmt: skip
    return {"events": [tuple(e) for e in events], "bodies": bodies}


# What the sync tests share.

import itertools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

_dbs = itertools.count()


def new_db(cluster: Cluster) -> str:
    """A fresh database on the cluster, its URL (password in it)."""
    name = f"t{os.getpid()}_{next(_dbs)}"
    cluster.sql(f"CREATE DATABASE {name}")
    return cluster.url(name)


def ctx(*args: str, machine: str = "dev-a", timeout: float = 60,
        **env: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run([sys.executable, "-m", "ctxview.cli", *args], text=True,
                          capture_output=True, timeout=timeout,
                          env={**os.environ, "CTXVIEW_MACHINE": machine, **env})  # fmt: skip


def spawn(*args: str, machine: str = "dev-a", **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "ctxview.cli", *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "CTXVIEW_MACHINE": machine, **env})  # fmt: skip


def store(tmp: Path, name: str, sid: str, n: int, size: int = 200) -> Path:
    path = tmp / f"{name}.db"
    w = write_live(path, sid, n, 0, size)
    assert w.wait(60) == 0
    return path


def until(check: object, seconds: float = 20) -> None:
    import sqlite3

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except sqlite3.OperationalError:  # a replica made, its schema not yet (a loaded machine)
            pass
        time.sleep(0.1)
    raise AssertionError("not reached in time")
