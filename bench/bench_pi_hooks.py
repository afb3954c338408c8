"""The time ctxview's pi extension adds per tool call, with the real pi (tests/agents/pi) against
the scripted Messages API: one `pi -p` run of N tool calls (reads of N files, then the same N
`bash` commands), hooked (`ctxview install pi`) and plain. A call's time is the gap between the
model server's answer naming the call and pi's next request (pi runs the tool, the extension
asks the engine, pi sends the result); the figure is p50 hooked minus p50 plain, per tool.
Beside it, the engine's own phases for the extension's calls (its trace, `<store>.hook-trace.
jsonl`: `transcript` is pi's session file taken in before each call), and the rest of the
hooked call's added time: the extension's loopback http request and pi's own work around it.

    .venv/bin/python bench/bench_pi_hooks.py [--calls 40] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "agents"))

from fake_anthropic import FakeAnthropic
from pi_helpers import pi_project

from ctxview.agents import hook_trace


class Timed(FakeAnthropic):
    """Each main request's arrival time, and when each answer went out."""

    def __init__(self, steps: list[Any]) -> None:
        super().__init__(steps)
        self.arrived: list[float] = []
        self.answered: list[float] = []

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if body.get("tools"):
            self.arrived.append(time.perf_counter())
        blocks = super().answer(body)
        if body.get("tools"):
            self.answered.append(time.perf_counter())
        return blocks


def one_run(hooked: bool, calls: int, traces: list[dict[str, Any]]) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = _run(Path(tmp), hooked, calls)
        # The engine saved its traces as it exited (pi_project stops it).
        traces += [t for t in hook_trace.read(Path(tmp) / "state" / "store.db")
                   if t.get("event") == "pi.tool_result"][1:]  # fmt: skip
        return out


def _run(tmp: Path, hooked: bool, calls: int) -> dict[str, list[float]]:
    with pi_project(tmp) as p:
        for i in range(calls):
            (p.root / f"f{i}.py").write_text("".join(f"line {j} of file {i}\n" for j in range(50)))
        if hooked:
            assert p.ctxview("install", "pi").returncode == 0
        steps: list[Any] = [{"tool": "read", "input": {"path": f"f{i}.py"}} for i in range(calls)]
        steps += [{"tool": "bash", "input": {"command": f"seq 1 {i + 1}"}} for i in range(calls)]
        steps.append({"text": "Done."})
        with Timed(steps) as api:
            p.provider(api.url)
            p.print("go")
        gaps = [api.arrived[k + 1] - api.answered[k] for k in range(len(api.answered) - 1)]
        return {"read": [g * 1000 for g in gaps[:calls]],
                "bash": [g * 1000 for g in gaps[calls:2 * calls]]}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out: dict[bool, dict[str, list[float]]] = {True: {"read": [], "bash": []},
                                                False: {"read": [], "bash": []}}  # fmt: skip
    traces: list[dict[str, Any]] = []
    for r in range(args.runs):
        for hooked in (False, True) if r % 2 == 0 else (True, False):
            for tool, ms in one_run(hooked, args.calls, traces).items():
                out[hooked][tool] += ms[1:]  # the first call of a run starts things up
    load = os.getloadavg()
    print(f"pi 0.73.1, {args.runs} runs x {args.calls} calls per tool; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    for tool in ("read", "bash"):
        plain, hooked = statistics.median(out[False][tool]), statistics.median(out[True][tool])
        p90 = statistics.quantiles(out[True][tool], n=10)[-1]
        print(f"{tool:5} per call p50: plain {plain:6.2f} ms, hooked {hooked:6.2f} ms "
              f"(p90 {p90:6.2f}); added {hooked - plain:6.2f} ms")  # fmt: skip
        mine = [t for t in traces if t.get("tool") == tool]
        if mine:
            print("  the engine's own phases (its trace), from the request read to the answer:")
            for line in hook_trace.table(mine):
                print("    " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
