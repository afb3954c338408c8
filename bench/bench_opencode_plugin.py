"""The time ctxview's OpenCode plugin adds per tool call, with the real OpenCode
(tests/agents/opencode) against the scripted model. Rounds of two runs, plain and with `ctxview
install opencode`, interleaved (the order swapped each round) so a change of the machine's load
falls on both; each run is one `opencode run` of `--calls` reads of one file (a range moving
by a line) and as many `echo`s. Per tool, p50 and p95 of:

- OpenCode's own record of each tool part (`state.time.end - start`, which spans
  `tool.execute.after`), plain and hooked, and the difference;
- the plugin's own clock (`CTXVIEW_PLUGIN_TIMES`, plugin.js): its round trip to the resident
  engine (the request over the engine's command socket and the answer) and the whole
  `tool.execute.after`;
- the same requests (a plain run's parts, as the plugin would send them) sent by the Bun inside
  OpenCode's binary alone, through the plugin's own `exchange`, to the same engine: the hop
  without OpenCode around it;
- the engine's own phases for OpenCode's calls (its trace, `<store>.hook-trace.jsonl`).

All runs share one store, so its resident engine is running after a first hooked run that is
not counted, as after a user's first session; each run's first call of each tool is left out
(OpenCode's own warm-up). The load average is printed before and after.

    .venv/bin/python bench/bench_opencode_plugin.py [--calls 40] [--rounds 3] [--strict]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "agents"))
from fake_anthropic import FakeAnthropic
from opencode_helpers import OPENCODE, Project

from ctxview.agents import hook_trace
from ctxview.agents.engine_socket import socket_file
from ctxview.agents.hook_client import stop
from ctxview.agents.hook_trace import pct

BINARY = OPENCODE.resolve()  # OpenCode's own executable (a Bun build), not a wrapper
TARGET_P50 = 5.0  # ms the plugin may add per call, p50 (issue 19)
TOOLS = ("read", "bash")


def _steps(f: Path, n: int) -> list[dict[str, Any]]:
    reads = [{"tool": "read", "input": {"filePath": str(f), "offset": 1 + i, "limit": 50}}
             for i in range(n)]  # fmt: skip
    echos = [{"tool": "bash", "input": {"command": f"echo {i}", "description": "echo"}}
             for i in range(n)]  # fmt: skip
    return [*reads, *echos, {"text": "Done."}]


def _first_calls(n: int) -> set[str]:
    return {"toolu_0001_read", f"toolu_{n + 1:04d}_bash"}


def run(p: Project, hooked: bool, n: int, times: Path, bodies: list[dict[str, Any]] | None = None
        ) -> dict[str, list[float]]:  # fmt: skip
    """One session; OpenCode's time per call, by tool (each tool's first call left out). The
    plugin's request for each call goes to `bodies` (from a plain run's parts: what the plugin
    would have sent)."""
    f = p.root / "a.py"
    f.write_text("".join(f"x{i} = {i}\n" for i in range(200)))
    with FakeAnthropic(_steps(f, n)) as api:
        p.write_config(api.url)
        extra = {"CTXVIEW_PLUGIN_TIMES": str(times)} if hooked else {}
        events = p.run("go", **extra)
    skip = _first_calls(n)
    out: dict[str, list[float]] = {t: [] for t in TOOLS}
    for e in events:
        part = e.get("part") or {}
        state = part.get("state") or {}
        t = state.get("time") or {}
        tool = str(part.get("tool"))
        counted = tool in out and "end" in t and part.get("callID") not in skip
        if e.get("type") == "tool_use" and counted:
            out[tool].append(float(t["end"] - t["start"]))
            if bodies is not None:
                bodies.append({"session_id": "ses_direct", "tool_name": tool,
                               "tool_use_id": f"direct_{len(bodies)}", "args": state["input"],
                               "output": state["output"], "metadata": state.get("metadata", {}),
                               "directory": str(p.root)})  # fmt: skip
    assert all(len(v) == n - 1 for v in out.values()), {k: len(v) for k, v in out.items()}
    return out


# The same requests from the same runtime (the Bun inside OpenCode's binary, BUN_BE_BUN=1) through
# the plugin's own `exchange` (cut from plugin.js) to the same engine, one every GAP_MS as a
# model's turns space them, without OpenCode around them.
DIRECT_JS = """
import { readFileSync, writeFileSync } from "node:fs"
const [SOCKET, bodiesPath, outPath, gap] = process.argv.slice(2)
const BUDGET_MS = 2000
EXCHANGE
const out = []
for (const body of JSON.parse(readFileSync(bodiesPath, "utf8"))) {
  await new Promise((r) => setTimeout(r, Number(gap)))
  const began = performance.now()
  const text = await exchange(`opencode.tool\\n${JSON.stringify(body)}`, Date.now() + BUDGET_MS)
  if (typeof JSON.parse(text).output !== "string") throw new Error("no answer")
  out.push({ tool: body.tool_name, ms: performance.now() - began })
}
writeFileSync(outPath, JSON.stringify(out))
"""
GAP_MS = 20
PLUGIN_JS = (
    Path(__file__).resolve().parents[1] / "src" / "ctxview" / "agents" / "opencode" / "plugin.js"
)


def direct(store: Path, bodies: list[dict[str, Any]], tmp: Path) -> dict[str, list[float]]:
    script, sent, got = tmp / "direct.mjs", tmp / "direct-bodies.json", tmp / "direct-out.json"
    plugin = PLUGIN_JS.read_text()
    cut = plugin[plugin.index("function exchange(") : plugin.index("function within(")]
    script.write_text(DIRECT_JS.replace("EXCHANGE", cut))
    sent.write_text(json.dumps([{"hook_event_name": "opencode.tool", **b} for b in bodies]))
    where = socket_file(str(store))
    done = subprocess.run([str(BINARY), str(script), where, str(sent), str(got), str(GAP_MS)],
                          env={**os.environ, "BUN_BE_BUN": "1"}, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, list[float]] = {t: [] for t in TOOLS}
    for x in json.loads(got.read_text()):
        out[x["tool"]].append(float(x["ms"]))
    return out


def _line(name: str, values: list[float]) -> str:
    return (f"{name:<34} p50 {statistics.median(values):7.2f} ms  p95 {pct(values, 95):7.2f} ms  "
            f"({len(values)} calls)")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=40, help="calls per tool per run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of one plain, one hooked run")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = ap.parse_args()
    if not OPENCODE.exists():
        print(f"no OpenCode at {OPENCODE} (npm ci --prefix tests/agents/opencode)")
        return 1
    load0 = os.getloadavg()
    per: dict[bool, dict[str, list[float]]] = {h: {t: [] for t in TOOLS} for h in (False, True)}
    plugin: list[dict[str, Any]] = []
    bodies: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ctxview-bench-") as tmp:
        base = Path(tmp)
        store = base / "store.db"
        times = base / "plugin-times.jsonl"
        projects = {h: Project(base / name, base / f"{name}-home", store)
                    for h, name in ((False, "plain"), (True, "hooked"))}  # fmt: skip
        for p in projects.values():
            p.root.mkdir()
            p.home.mkdir()
        try:
            hooked = projects[True]
            done = hooked.ctxview("install", "opencode")
            assert done.returncode == 0, done.stderr
            # Not counted: starts the engine, and OpenCode's own first install of its plugin
            # package into .opencode/ (it does that for any folder of plugins).
            run(hooked, True, 3, base / "warm-times.jsonl")
            run(projects[False], False, 3, times)
            Path(hook_trace.log_path(store)).unlink(missing_ok=True)
            for r in range(args.rounds):
                for h in (False, True) if r % 2 == 0 else (True, False):
                    got = run(projects[h], h, args.calls, times, None if h else bodies)
                    for tool, values in got.items():
                        per[h][tool] += values
            alone = direct(store, bodies, base)
        finally:
            stop(store)  # the engine saves its traces as it exits
        skip = _first_calls(args.calls)
        plugin = [json.loads(x) for x in times.read_text().splitlines()]
        plugin = [x for x in plugin if x["call"] not in skip]
        traces = [t for t in hook_trace.read(store) if t.get("event") == "opencode.tool"]
        traces = traces[: len(traces) - len(bodies)]  # Bun alone's came last: OpenCode's only
    load1 = os.getloadavg()
    print(f"OpenCode plugin: {args.rounds} rounds (plain and hooked interleaved) of "
          f"{args.calls} calls per tool; load average {load0[0]:.2f} before, {load1[0]:.2f} "
          f"after, on {os.cpu_count()} cores")  # fmt: skip
    ok = True
    for tool in TOOLS:
        plain, hooked_ = per[False][tool], per[True][tool]
        added = statistics.median(hooked_) - statistics.median(plain)
        print(f"{tool}:")
        print("  " + _line("OpenCode's time, plain", plain))
        print("  " + _line("OpenCode's time, hooked", hooked_))
        print(f"  {'added (hooked - plain)':<34} p50 {added:+7.2f} ms  p95 "
              f"{pct(hooked_, 95) - pct(plain, 95):+7.2f} ms")  # fmt: skip
        mine = [x for x in plugin if x["tool"] == tool]
        rtt = [float(x["engine_ms"]) for x in mine if x["engine_ms"] is not None]
        print("  " + _line("plugin's clock: engine round trip", rtt))
        print("  " + _line("plugin's clock: whole hook", [float(x["hook_ms"]) for x in mine]))
        print("  " + _line("same requests, Bun alone", alone[tool]))
        ok &= statistics.median([float(x["hook_ms"]) for x in mine]) <= TARGET_P50
        mine_traces = [t for t in traces if t.get("tool") == tool]
        if mine_traces:
            print("  the engine's own phases (its trace), from the request read to the answer:")
            for line in hook_trace.table(mine_traces):
                print("    " + line)
    print(f"target: the plugin's whole hook p50 <= {TARGET_P50:g} ms: {'ok' if ok else 'MISSED'}")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
