"""SIGKILL rounds against real `ctxview import` and `ctxview follow` processes: each round starts
the command on a big transcript, kills it with SIGKILL at a random moment, and the next round
starts it again; at the end it runs to completion, and the store is compared whole (every
session, event and body, see import_compare.py) with one clean import of the same file.

Used by tests/test_import_resume.py (a fixed seed, a fixed number of rounds) and
bench/import_kill.py (longer)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ctxview.backend.importers.runner import COMMIT_SECONDS
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
    return [sys.executable, "-m", "ctxview.backend.cli", "--store", str(store), *args]


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
    """`ctxview import` killed `rounds` times at random moments, then run to its end."""
    rng = random.Random(seed)
    clean, killed = work / "clean.db", work / "killed.db"
    out = Rounds()
    out.clean_seconds = clean_import(clean, source)
    size = source.stat().st_size
    for _ in range(rounds):
        proc = subprocess.Popen(command(killed, "import", str(source)), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        # Timed by the run's progress, not the clock (an idle machine finished runs that a
        # sleep scaled from the clean import's time meant to cut): once it has committed once,
        # or twice, a moment into its next transaction, which lasts COMMIT_SECONDS.
        for _commit in range(rng.randint(1, 2)):
            _wait_commit(proc, killed, source)
        time.sleep(rng.uniform(0.0, 0.8 * COMMIT_SECONDS))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        out.rounds += 1
        out.mid_import += import_offset(killed, source) < size
    clean_import(killed, source)
    out.clean_counts, out.killed_counts = counts(clean), counts(killed)
    out.differences = differences(dump(clean), dump(killed))
    return out


def _wait_commit(proc: subprocess.Popen, store: Path, source: Path, timeout: float = 120) -> None:
    """Until `proc` has committed once more (the import offset moved) or has ended."""
    before = import_offset(store, source)
    deadline = time.monotonic() + timeout  # only a hang takes this long
    while (proc.poll() is None and import_offset(store, source) == before
           and time.monotonic() < deadline):  # fmt: skip
        time.sleep(0.01)


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
            raise AssertionError("the restarted follow did not stop within 60 s of ^C; it said:\n"
                                 + "".join(said.lines)) from None
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
