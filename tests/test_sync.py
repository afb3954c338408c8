"""Push and pull through a real PostgreSQL 15 (tests/pg_helpers.py starts a cluster of its own):
the schema and its refusals, exact copies, kill -9 at random moments, --watch across two devices
and a third, and a server restarted under a --watch push."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import pg_helpers
from pg_helpers import ctx, spawn, store, until

cluster, url = pg_helpers.cluster, pg_helpers.url  # the fixtures both sync modules use

pytestmark = pg_helpers.needs_postgres


def test_push_pull_exact_and_idempotent(tmp_path: Path, url: str) -> None:
    a = store(tmp_path, "a", "20261201-080000-aaaaaa", 300)
    first = ctx("--store", str(a), "push", "--to", url)
    assert first.returncode == 0, first.stderr
    assert "Pushed 900 rows" in first.stdout and "as dev-a" in first.stdout
    again = ctx("--store", str(a), "push", "--to", url)
    assert "Pushed 0 rows" in again.stdout
    src = pg_helpers.rows(a)
    assert pg_helpers.remote_rows(url, "dev-a") == {"events": src["events"],
                                                    "bodies": src["bodies"]}  # fmt: skip
    c = tmp_path / "c.db"
    assert ctx("--store", str(c), "pull", "--from", url).returncode == 0
    assert ctx("--store", str(c), "pull", "--from", url).stdout.startswith("Pulled 0 rows")
    assert pg_helpers.rows(c) == src
    assert "'machine': 'dev-a'" in str(pg_helpers.rows(c, machine_free=False)["sessions"])
    # The machine's name was chosen once: another CTXVIEW_MACHINE later does not rename it.
    assert "as dev-a" in ctx("--store", str(a), "push", "--to", url, machine="other").stdout
    # Search runs in PostgreSQL.
    hit = ctx("--store", url, "search", "result", "17")
    assert hit.returncode == 0, hit.stderr
    assert "dev-a/20261201-080000-aaaaaa" in hit.stdout


def _event_scans(url: str) -> int:
    """The scans of ctxview_events so far, once the server's counters have settled (a backend
    reports its own at its exit, a moment after its client's)."""
    import psycopg

    def scans() -> int:
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) FROM pg_stat_user_tables "
                "WHERE relname = 'ctxview_events'"
            ).fetchone()
            return int(row[0]) if row else 0

    last, deadline = scans(), time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = scans()
        if now == last:
            return now
        last = now
    return last


def test_a_pull_with_nothing_new_reads_no_session_rows(tmp_path: Path, url: str) -> None:
    """A pass (pull --watch makes one every few seconds) over sessions whose version has not moved
    asks nothing of their rows: at a team's thousands of sessions it was two queries each."""
    for i in range(3):
        a = store(tmp_path, f"a{i}", f"20261201-08000{i}-eeeeee", 2)
        assert ctx("--store", str(a), "push", "--to", url).returncode == 0
    c = tmp_path / "c.db"
    assert ctx("--store", str(c), "pull", "--from", url).returncode == 0
    before = _event_scans(url)
    assert ctx("--store", str(c), "pull", "--from", url).stdout.startswith("Pulled 0 rows")
    assert _event_scans(url) == before


def test_notifies_that_come_together_are_all_read(url: str) -> None:
    """Three NOTIFYs of one commit reach pull --watch in one packet: it pulls all three sessions
    at once (it took the first and dropped the others, which waited for the next full pass)."""
    import asyncio

    import psycopg

    from ctxview.sync.pull import notified
    from ctxview.sync.remote import CHANNEL, connect

    async def main() -> set[tuple[str, str]]:
        listen = await connect(url, autocommit=True)
        try:
            await listen.execute(f"LISTEN {CHANNEL}")
            async with await psycopg.AsyncConnection.connect(url) as other:
                await other.execute("SELECT pg_notify(%s, 'm1\ts1'), pg_notify(%s, 'm2\ts2'), "
                                    "pg_notify(%s, 'm3\ts3')", (CHANNEL,) * 3)  # fmt: skip
                await other.commit()
            return await notified(listen, 10.0)
        finally:
            await listen.close()

    assert asyncio.run(main()) == {("m1", "s1"), ("m2", "s2"), ("m3", "s3")}


def test_same_id_on_two_machines_never_collides(tmp_path: Path, url: str) -> None:
    sid = "cc-3f1c0b5e-0000-4000-8000-000000000001"
    a = store(tmp_path, "a", sid, 3)
    b = store(tmp_path, "b", sid, 5)
    assert ctx("--store", str(a), "push", "--to", url, machine="dev-a").returncode == 0
    assert ctx("--store", str(b), "push", "--to", url, machine="dev-b").returncode == 0
    c = tmp_path / "c.db"
    assert ctx("--store", str(c), "pull", "--from", url).returncode == 0
    got = pg_helpers.rows(c)["sessions"]
    assert set(got) == {sid, f"{sid}@dev-b"}  # type: ignore[arg-type]
    only = tmp_path / "only.db"
    assert ctx("--store", str(only), "pull", "--from", url, "--machine", "dev-b").returncode == 0
    assert set(pg_helpers.rows(only)["sessions"]) == {sid}  # type: ignore[arg-type]


def test_refusals_one_sentence_no_password(tmp_path: Path, cluster: pg_helpers.Cluster,
                                           url: str) -> None:  # fmt: skip
    a = store(tmp_path, "a", "20261201-080000-bbbbbb", 2)

    def refused(target: str, *words: str, **env: str) -> None:
        out = ctx("--store", str(a), "push", "--to", target, **env)
        assert out.returncode == 1, out.stdout
        line = out.stderr.strip()
        assert line.count("\n") == 0 and pg_helpers.PASSWORD not in line, line
        for w in words:
            assert w in line, line

    refused(cluster.url(url.rsplit("/", 1)[1], password="wrong-pw"), "refused the password")
    refused(f"postgresql://postgres@127.0.0.1:{cluster.port}/{url.rsplit('/', 1)[1]}",
            "refused the password")  # fmt: skip
    # The password from the libpq environment instead of the URL.
    ok = ctx("--store", str(a), "push", "--to",
             f"postgresql://postgres@127.0.0.1:{cluster.port}/{url.rsplit('/', 1)[1]}",
             PGPASSWORD=pg_helpers.PASSWORD)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    refused(f"postgresql://postgres:{pg_helpers.PASSWORD}@127.0.0.1:1/x", "Cannot reach")
    cluster.sql("CREATE DATABASE other_app")
    cluster.sql("CREATE TABLE invoices (id int)", db="other_app")
    refused(cluster.url("other_app"), "another program's tables")
    cluster.sql("UPDATE ctxview_meta SET value = '99' WHERE key = 'schema_version'",
                db=url.rsplit("/", 1)[1])  # fmt: skip
    refused(url, "newer ctxview", "schema 99")
    # TLS settings pass through to libpq: this server has no TLS, so sslmode=require fails.
    refused(cluster.url("other_app") + "?sslmode=require", "Cannot reach")


def test_two_devices_watch_push_third_watch_pull(tmp_path: Path, url: str) -> None:
    a, b, c = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "c.db"
    wa = pg_helpers.write_live(a, "20261201-090000-aaaaaa", 1, 0)
    wb = pg_helpers.write_live(b, "20261201-090000-bbbbbb", 1, 0)
    assert wa.wait(30) == 0 and wb.wait(30) == 0
    procs = [spawn("--store", str(a), "push", "--to", url, "--watch", machine="dev-a"),
             spawn("--store", str(b), "push", "--to", url, "--watch", machine="dev-b"),
             spawn("--store", str(c), "pull", "--from", url, "--watch")]  # fmt: skip
    try:
        wa = pg_helpers.write_live(a, "20261201-090000-aaaaaa", 60, 20)
        wb = pg_helpers.write_live(b, "20261201-090000-bbbbbb", 60, 20)
        seen: list[tuple[int, int]] = []
        while wa.poll() is None or wb.poll() is None:
            if c.exists():
                ev = pg_helpers.rows(c)["events"]
                seen.append(
                    (
                        sum(e[0].endswith("a") for e in ev),  # type: ignore[attr-defined]
                        sum(e[0].endswith("b") for e in ev),
                    )
                )  # type: ignore[attr-defined]
            time.sleep(0.25)
        # Both sessions grew in the replica while they were being written.
        assert len({s[0] for s in seen}) >= 3 and len({s[1] for s in seen}) >= 3, seen
        want = {**pg_helpers.rows(a)["sessions"], **pg_helpers.rows(b)["sessions"]}  # type: ignore[dict-item]
        until(lambda: len(pg_helpers.rows(c)["events"]) == 244  # type: ignore[arg-type]
              and pg_helpers.rows(c)["sessions"] == want)  # fmt: skip
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


def test_server_restart_under_watch_push(tmp_path: Path, cluster: pg_helpers.Cluster,
                                         url: str) -> None:  # fmt: skip
    a = store(tmp_path, "a", "20261201-100000-dddddd", 1)
    push = spawn("--store", str(a), "push", "--to", url, "--watch")
    try:
        assert push.stdout is not None and "Pushed" in push.stdout.readline()
        w = pg_helpers.write_live(a, "20261201-100000-dddddd", 80, 40)
        time.sleep(0.6)
        cluster.stop("fast")
        time.sleep(1.0)
        cluster.start()
        assert w.wait(30) == 0

        def caught_up() -> bool:
            try:
                src = pg_helpers.rows(a)
                return pg_helpers.remote_rows(url, "dev-a") == {"events": src["events"],
                                                                "bodies": src["bodies"]}  # fmt: skip
            except Exception:
                return False

        try:
            until(caught_up, 30)
        except AssertionError:
            push.terminate()
            src = pg_helpers.rows(a)
            got = pg_helpers.remote_rows(url, "dev-a")
            raise AssertionError(
                (
                    len(src["events"]),
                    len(got["events"]),  # type: ignore[arg-type]
                    push.communicate(timeout=10),
                )
            ) from None
        push.terminate()
        _, err = push.communicate(timeout=10)
    finally:
        if push.poll() is None:
            push.kill()
    assert "reconnected" in err and pg_helpers.PASSWORD not in err, err


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_view_on_postgresql_follows_two_devices(tmp_path: Path, url: str) -> None:
    """`ctxview view --store postgresql://…` in a real terminal: both devices' sessions, their
    machines, and the results counts growing while they are written."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for path, sid in ((a, "20261201-110000-aaaaaa"), (b, "20261201-110000-bbbbbb")):
        assert pg_helpers.write_live(path, sid, 1, 0).wait(30) == 0
    pushes = [spawn("--store", str(a), "push", "--to", url, "--watch", machine="dev-a"),
              spawn("--store", str(b), "push", "--to", url, "--watch", machine="dev-b")]  # fmt: skip
    name = f"ctxsync{os.getpid()}"
    env = f"-u COLUMNS -u LINES XDG_STATE_HOME={tmp_path / 'state'} TERM=xterm-256color"
    cmd = f"env {env} {sys.executable} -m ctxview.cli view --store '{url}'"
    subprocess.run(["tmux", "-L", name, "new-session", "-d", "-s", name, "-x", "180", "-y", "30",
                    cmd], check=True)  # fmt: skip

    def screen() -> str:
        return subprocess.run(["tmux", "-L", name, "capture-pane", "-p", "-t", name], text=True,
                              capture_output=True).stdout  # fmt: skip

    try:
        try:
            until(lambda: "live@dev-a" in screen() and "live@dev-b" in screen(), 30)
        except AssertionError:
            raise AssertionError(screen()) from None
        assert pg_helpers.PASSWORD not in screen()
        writers = [pg_helpers.write_live(a, "20261201-110000-aaaaaa", 40, 20),
                   pg_helpers.write_live(b, "20261201-110000-bbbbbb", 40, 20)]  # fmt: skip
        for w in writers:
            assert w.wait(30) == 0

        def grown() -> bool:
            rows = [ln for ln in screen().splitlines() if "live@dev-" in ln]
            return len(rows) == 2 and all(" 41 " in ln for ln in rows)

        try:
            until(grown, 20)
        except AssertionError:
            raise AssertionError(screen()) from None
    finally:
        subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)
        for p in pushes:
            p.terminate()
            p.wait(10)


def test_connection_lost_mid_push(tmp_path: Path, cluster: pg_helpers.Cluster,
                                  url: str) -> None:  # fmt: skip
    """The server ends the push's connection in the middle: one sentence, exit 1, and the next
    push sends exactly what was missing."""
    a = store(tmp_path, "a", "20261201-130000-eeeeee", 600, size=1000)
    push = spawn("--store", str(a), "push", "--to", url, CTXVIEW_SYNC_ROWS="4")
    db = url.rsplit("/", 1)[1]

    def started() -> bool:
        try:
            return cluster.sql("SELECT count(*) FROM ctxview_events", db=db).strip() != "0"
        except subprocess.CalledProcessError:  # not made yet
            return False

    until(started, 20)
    cluster.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'ctxview'")  # fmt: skip
    _, err = push.communicate(timeout=30)
    assert push.returncode == 1, err
    line = err.strip()
    assert "\n" not in line and "was lost during the push" in line, line
    assert pg_helpers.PASSWORD not in line
    assert ctx("--store", str(a), "push", "--to", url).returncode == 0
    src = pg_helpers.rows(a)
    assert pg_helpers.remote_rows(url, "dev-a") == {"events": src["events"],
                                                    "bodies": src["bodies"]}  # fmt: skip


def test_watch_push_and_pull_wait_for_a_server_not_up_yet(tmp_path: Path,
                                                          cluster: pg_helpers.Cluster) -> None:  # fmt: skip
    """Started while the server is down, --watch retries with backoff instead of exiting; a
    wrong password is no reason to wait: exit 1 at once."""
    a = store(tmp_path, "a", "20261201-140000-ffffff", 20)
    url = pg_helpers.new_db(cluster)
    cluster.stop("fast")
    try:
        push = spawn("--store", str(a), "push", "--to", url, "--watch")
        pull = spawn("--store", str(tmp_path / "c.db"), "pull", "--from", url, "--watch")
        time.sleep(2.5)
        assert push.poll() is None and pull.poll() is None
    finally:
        cluster.start()
    try:
        until(
            lambda: (
                (tmp_path / "c.db").exists()
                and len(pg_helpers.rows(tmp_path / "c.db")["events"]) == 40
            ),
            30,
        )  # type: ignore[arg-type]
    finally:
        for p in (push, pull):
            p.terminate()
            p.wait(10)
    bad = ctx("--store", str(a), "push", "--watch", "--to",
              cluster.url(url.rsplit("/", 1)[1], password="wrong"), timeout=30)  # fmt: skip
    assert bad.returncode == 1 and "refused the password" in bad.stderr
