"""Where a hook's milliseconds go: one trace per hook the resident engine answers, its phases
timed with `perf_counter` (a few calls per hook, no I/O on the hook's path). The engine keeps
the newest in memory and appends them to `<store>.hook-trace.jsonl` from its idle loop, so
`ctxview doctor` (another process) and the benchmarks show the p50 and p95 of each phase.

The phases, in the order a hook goes through them:
- `read`: the request read from its transport (the HTTP request, or the command client's bytes)
- `parse`: the hook input's JSON, and the checks on it
- `lock`: waiting for the session's lock (this process's and the flock other writers share)
- `catch_up`: the session brought up to date with the store (`served.Sessions.serve`)
- `written`: waiting until the transcript holds the record of the call
- `transcript`: the transcript's growth imported (messages, usage, sub-agents)
- `rules`: the 3.0.0 rules' work on the result (in memory)
- `reserve`: the ids the answer gives made durable in the store, and the call's events kept in
  the engine's journal (`hook_journal`), before the answer
- `answer`: the answer encoded and handed to the transport
- `commit`: the call's events written to the store

`answered` is the time from the request's first byte to the answer sent; `total` goes on to the
end of the step (what runs after the answer, off the call's path, included).
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

PHASES = ("read", "parse", "lock", "catch_up", "written", "transcript", "rules", "reserve",
          "answer", "commit")  # fmt: skip
KEEP = 500  # traces kept in the file (and in memory)
_MAX_BYTES = 512 << 10


@dataclass
class Trace:
    """One hook's phases, in milliseconds."""

    event: str = "?"
    tool: str = ""
    transport: str = ""
    start: float = field(default_factory=time.perf_counter)
    phases: dict[str, float] = field(default_factory=dict)
    answered: float | None = None  # ms from the start to the answer sent
    total: float | None = None
    error: str | None = None
    _mark: float = 0.0

    def __post_init__(self) -> None:
        self._mark = self.start

    def lap(self, phase: str) -> None:
        """The time since the last lap (or the start) goes to `phase`."""
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + (now - self._mark) * 1000
        self._mark = now

    def add(self, phase: str, ms: float) -> None:
        """Time measured apart (the transport's, while the step may still be lapping)."""
        self.phases[phase] = self.phases.get(phase, 0.0) + ms

    def skip(self) -> None:
        """The time since the last lap belongs to no phase (waiting for a step's other half)."""
        self._mark = time.perf_counter()

    def sent(self) -> None:
        self.answered = (time.perf_counter() - self.start) * 1000

    def done(self) -> None:
        self.total = (time.perf_counter() - self.start) * 1000
        if self.answered is None:
            self.answered = self.total

    def as_json(self) -> dict[str, Any]:
        # `at`: the wall clock at the request's first byte, to line a trace up with the client's
        # own clock (bench/bench_opencode_plugin.py).
        at = time.time() - (time.perf_counter() - self.start)
        out: dict[str, Any] = {"ts": time.time(), "at": round(at, 6), "event": self.event,
                               "transport": self.transport,
                               "phases": {k: round(v, 3) for k, v in self.phases.items()},
                               "answered": round(self.answered or 0.0, 3),
                               "total": round(self.total or 0.0, 3)}  # fmt: skip
        if self.tool:
            out["tool"] = self.tool
        if self.error:
            out["error"] = self.error
        return out


class Traces:
    """The newest traces, in memory, and the ones not yet appended to the store's trace file."""

    def __init__(self, store: Path | str) -> None:
        self.path = log_path(store)
        self.recent: deque[Trace] = deque(maxlen=KEEP)
        self._unsaved: list[Trace] = []

    def add(self, trace: Trace) -> None:
        """A step's trace, as it ends (its transport may still add the answer's time: it is
        read when saved)."""
        self.recent.append(trace)
        self._unsaved.append(trace)

    def save(self) -> None:
        """Append what is new (from the engine's idle loop, never on a hook's path); a file
        past its size keeps its newest `KEEP` lines."""
        if not self._unsaved:
            return
        lines, self._unsaved = self._unsaved, []
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write("".join(json.dumps(t.as_json()) + "\n" for t in lines))
            if os.path.getsize(self.path) > _MAX_BYTES:
                kept = [json.dumps(t.as_json()) + "\n" for t in self.recent]
                tmp = f"{self.path}.tmp"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write("".join(kept))
                os.replace(tmp, self.path)
        except OSError:
            pass  # a trace is a help, never a reason to fail


def log_path(store: Path | str) -> str:
    return f"{os.fspath(store)}.hook-trace.jsonl"


def read(store: Path | str) -> list[dict[str, Any]]:
    """The traces recorded for `store`, oldest first ([] when there are none)."""
    try:
        with open(log_path(store), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("phases"), dict):
            out.append(entry)
    return out


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] if s else 0.0


def summary(traces: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Per phase (and `answered`, `total`): (p50, p95) in ms over `traces`; a phase a trace did
    not go through counts as 0 there, so the phases add up."""
    out: dict[str, tuple[float, float]] = {}
    for phase in (*PHASES, "answered", "total"):
        values = [float(t["phases"].get(phase, 0.0)) if phase in PHASES else float(t.get(phase)
                  or 0.0) for t in traces]  # fmt: skip
        if any(values):
            out[phase] = (pct(values, 50), pct(values, 95))
    return out


def table(traces: list[dict[str, Any]]) -> list[str]:
    """`summary` as lines for a person: `phase  p50 ms  p95 ms`."""
    lines = [f"  {'phase':<11} {'p50 ms':>8} {'p95 ms':>8}"]
    for phase, (p50, p95) in summary(traces).items():
        lines.append(f"  {phase:<11} {p50:8.2f} {p95:8.2f}")
    return lines
