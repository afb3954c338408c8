"""SIGKILL rounds against real `ctxview import` and `ctxview follow` processes: each round starts
the command on a big transcript, kills it with SIGKILL at a random point of its work (an import
once it has read past a random point of the file, a follow after random appends), and the next
round starts it again; at the end it runs to completion, and the store is compared whole (every
session, event and body, see import_compare.py) with one clean import of the same file.

Used by tests/test_import_kill.py (a fixed seed, a fixed number of rounds) and
bench/import_kill.py (longer)."""

from __future__ import annotations

import json
import os
import random
import re
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from import_compare import counts, differences, dump

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "import"
REALDATA = ROOT.parent / "shared" / "realdata"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IDS = re.compile(r"\b((?:toolu|msg|req|call)_[A-Za-z0-9]+)")


def claude_sources(real: bool = True, *, fixtures: bool = True) -> list[Path]:
    """Claude Code sessions to build from: our fixtures (unless not asked for), and the real ones
    when asked for and ../shared/realdata is here (their sub-agent files left out)."""
    out = [FIXTURES / "claude_session.jsonl", FIXTURES / "claude_inline_sidechain.jsonl"]
    out = out if fixtures else []
    if real and REALDATA.is_dir():
        for p in sorted(REALDATA.rglob("*.jsonl")):
            head = p.read_text(encoding="utf-8", errors="replace")[:4000]
            if not p.name.startswith("agent-") and '"sessionId"' in head:
                out.append(p)
    return out


def build(target: Path, megabytes: float, seed: int = 0, *, real: bool = True,
          fixtures: bool = True) -> int:  # fmt: skip
    """Rewritten copies of the sources' records (fresh uuids, message and tool ids per copy,
    drawn from `seed`) until the file is `megabytes` big; its size."""
    rng = random.Random(seed)
    lines = [line for p in claude_sources(real, fixtures=fixtures)
             for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]  # fmt: skip
    if not lines:
        raise FileNotFoundError("no Claude Code transcript to build from (../shared/realdata?)")
    size, copy = 0, 0
    with open(target, "w", encoding="utf-8") as out:
        while size < megabytes * 1_000_000:
            fresh: dict[str, str] = {}

            def new_uuid(m: re.Match[str], fresh: dict[str, str] = fresh) -> str:
                first = m.group(0)
                if first not in fresh:
                    h = f"{rng.getrandbits(128):032x}"
                    fresh[first] = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
                return fresh[first]

            def new_id(m: re.Match[str], suffix: str = f"x{copy}") -> str:
                return m.group(1) + suffix

            for line in lines:
                line = _IDS.sub(new_id, _UUID.sub(new_uuid, line))
                out.write(line + "\n")
                size += len(line.encode()) + 1
            copy += 1
    return size


def command(store: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ctxview.cli", "--store", str(store), *args]


def follow_command(store: Path, path: Path) -> list[str]:
    """`ctxview follow PATH` that only imports (no viewer, where the command has one)."""
    help_text = subprocess.run(command(store, "follow", "--help"), capture_output=True,
                               text=True, env=_env(), timeout=60).stdout  # fmt: skip
    return command(store, "follow", *(["--no-view"] if "--no-view" in help_text else []),
                   str(path))  # fmt: skip


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def import_offset(store: Path, source: Path) -> int:
    """How far the store's import of `source` has committed (0 before anything)."""
    if not store.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
        try:
            row = conn.execute("SELECT data FROM sessions WHERE source_path = ? AND "
                               "parent_session IS NULL", (str(source.resolve()),)).fetchone()  # fmt: skip
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
    return int(json.loads(row[0]).get("import", {}).get("offset", 0)) if row else 0


@dataclass
class Rounds:
    rounds: int = 0
    mid_import: int = 0  # kills that left the file partly imported
    offsets: list[int] = field(default_factory=list)  # the committed offset after each kill
    clean_seconds: float = 0.0
    clean_counts: dict[str, int] = field(default_factory=dict)
    killed_counts: dict[str, int] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)


def clean_import(store: Path, source: Path) -> float:
    t0 = time.monotonic()
    subprocess.run(command(store, "import", str(source)), check=True, capture_output=True,
                   env=_env(), timeout=600)  # fmt: skip
    return time.monotonic() - t0


def kill_import(work: Path, source: Path, rounds: int, seed: int) -> Rounds:
    """`ctxview import` killed `rounds` times at random points of the file, then run to its end."""
    rng = random.Random(seed)
    clean, killed = work / "clean.db", work / "killed.db"
    out = Rounds()
    out.clean_seconds = clean_import(clean, source)
    size = source.stat().st_size
    # Where each kill lands is a point of the file, not a moment: drawn at random, in order, all
    # short of the last fifth (read to its end, a run commits and leaves nothing to redo). A kill
    # timed by commits or the clock counted luck: an idle machine read the file in a few
    # commits, so most rounds found it done (2 kills of 10 mid-import, 4 runs of 4).
    for point in sorted(int(rng.uniform(0.0, 0.8) * size) for _ in range(rounds)):
        start = import_offset(killed, source)
        proc = subprocess.Popen(command(killed, "import", "--progress", str(source)), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        try:
            # Past the point (or, resumed beyond it, a first line read): mid-transaction, what it
            # read since its last commit is lost, and whatever it committed is resumed from.
            _read_past(proc, max(point - start, 1))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            assert proc.stderr is not None
            proc.stderr.close()
        out.rounds += 1
        out.offsets.append(import_offset(killed, source))
        out.mid_import += out.offsets[-1] < size
    clean_import(killed, source)
    out.clean_counts, out.killed_counts = counts(clean), counts(killed)
    out.differences = differences(dump(clean), dump(killed))
    return out


_PROGRESS = re.compile(rb"(\d+\.\d)/\d+\.\d MB")


def _read_past(proc: subprocess.Popen, nbytes: int, timeout: float = 120) -> None:
    """Until `proc`'s progress bar (`import --progress`) says it has read `nbytes` this run, or
    it has ended (only a hang takes `timeout`). The bar shows tenths of a MB, redrawn each 0.1 s
    of reading."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    deadline = time.monotonic() + timeout
    tail = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return  # it ended
        tail = (tail + chunk)[-4096:]
        shown = _PROGRESS.findall(tail)
        if shown and float(shown[-1]) * 1e6 + 50_000 >= nbytes:  # tenths: rounded to 0.05 MB
            return


def _wait_offset(store: Path, source: Path, size: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if import_offset(store, source) >= size:
            return True
        time.sleep(0.05)
    return False


class _Said:
    """What a process writes to stderr, read by a thread (so a wait for a line is bounded)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stderr is not None
        self.proc = proc
        self.lines: list[str] = []
        self._thread = threading.Thread(target=lambda: self.lines.extend(proc.stderr))
        self._thread.start()

    def wait_for(self, start: str, timeout: float = 120) -> None:
        """Until a line starts with `start` or the process has ended (only a hang takes long)."""
        deadline = time.monotonic() + timeout
        while (not any(line.startswith(start) for line in self.lines)
               and self.proc.poll() is None and time.monotonic() < deadline):  # fmt: skip
            time.sleep(0.01)

    def close(self) -> None:
        self._thread.join(timeout=30)


def _line_start(data: bytes, at: int) -> int:
    end = data.find(b"\n", at)
    return len(data) if end < 0 else end + 1


def kill_follow(work: Path, full: Path, rounds: int, seed: int, backlog: float = 0.6) -> Rounds:
    """`ctxview follow` on a file that grows while it runs, killed `rounds` times at random
    moments and started again; at the end it takes the rest and stops. Compared with one clean
    import of the whole file (a followed session has not ended: that field is left out)."""
    rng = random.Random(seed)
    clean, killed = work / "clean-f.db", work / "killed-f.db"
    live = work / full.name.replace(".jsonl", "-live.jsonl")
    out = Rounds()
    out.clean_seconds = clean_import(clean, full)
    data = full.read_bytes()
    # It starts on a file already holding most of the session (what follow finds when it is
    # started late, or restarted after a while): the first kill lands in that catch-up.
    pos = _line_start(data, int(len(data) * backlog))
    live.write_bytes(data[:pos])
    follow = follow_command(killed, live)
    for n_round in range(rounds):
        proc = subprocess.Popen(follow, env=_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        # Timed by what it says and by our writes, not by the clock: once it is following (it
        # says so first, however slowly a loaded machine starts it), the first round is killed
        # in its catch-up, each round after a few random slices appended (cut anywhere, mid-line
        # too), either at once after the last one (so still to be taken in) or a moment later.
        said = _Said(proc)
        said.wait_for("Following ")
        if n_round == 0:
            time.sleep(rng.uniform(0.0, 0.4))
        at_once = rng.random() < 0.5
        for n_write in range(rng.randint(1, 5)):
            if pos >= len(data):
                break
            if n_write:
                time.sleep(rng.uniform(0.0, 0.2))
            n = rng.randint(1, max(1, len(data) // (rounds * 4)))
            with open(live, "ab") as f:
                f.write(data[pos : pos + n])
            pos += n
        if not at_once:
            time.sleep(rng.uniform(0.0, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        said.close()
        out.rounds += 1
        after = import_offset(killed, live)
        out.mid_import += after < pos  # it had not caught up: killed mid-work
    with open(live, "ab") as f:
        f.write(data[pos:])
    proc = subprocess.Popen(follow, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    said = _Said(proc)
    try:
        # Once it is following: the store may hold the whole file already (the last round's
        # follow caught up), and a ^C sent at once landed in its start-up (seen once, idle: it
        # then ran on and never ended). The stop is what is tested here, not a ^C mid-start.
        said.wait_for("Following ")
        finished = _wait_offset(killed, live, len(data), 120)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            said.close()
            raise AssertionError(
                "the restarted follow did not stop within 60 s of ^C; it said:\n"
                + "".join(said.lines)
            ) from None
        said.close()
    if not finished:
        out.differences = ["the restarted follow never reached the end of the file"]
        return out
    # The clean import of the same bytes at the same path, into its own store.
    clean.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{clean}{suffix}").unlink(missing_ok=True)
    clean_import(clean, live)
    out.clean_counts, out.killed_counts = counts(clean), counts(killed)
    out.differences = differences(dump(clean, ended=False), dump(killed, ended=False))
    return out
