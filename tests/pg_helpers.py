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

    def sql(self, statement: str, db: str = "postgres") -> str:
        out = self._as_postgres(
            BIN / "psql",
            "-h", str(self.folder), "-p", str(self.port), "-U", "postgres", "-d", db,
            "-At", "-c", statement,
        )  # fmt: skip
        return out.stdout


@contextmanager
def cluster() -> Iterator[Cluster]:
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
