"""The time ctxview's Gemini CLI hooks add per tool call, with the real Gemini CLI
(tests/agents/gemini) against the scripted Gemini API: one `gemini -p` run of N tool calls
(reads of N files, then N `run_shell_command`s), hooked (`ctxview install gemini`) and plain.
A call's time is the gap between the model server's answer naming the call and Gemini's next
request (Gemini runs the tool, the AfterTool hook asks the resident engine, Gemini runs the tail
call to ctxview's `show`, the BeforeModel hook looks at the next request); the figure is p50
hooked minus p50 plain, per tool. Gemini CLI 0.61 runs command hooks only, so a call starts two
processes (`python -S hook_client.py`: AfterTool, and BeforeModel before the next request),
then the tail call. Timed beside, to say whose the time is: the same run with two hooks that do
nothing (`cat >/dev/null; echo {}` on AfterTool and BeforeModel: Gemini's own price for the
hooks), and a bare `sh -c 'python -S -c pass'` (the floor under each of ctxview's processes).

    .venv/bin/python bench/bench_gemini_hooks.py [--calls 30] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxview.agents.hook_client import stop
from tests.agents.fake_gemini import Call, Say, Scripted
from tests.agents.gemini_helpers import CLI, ctxview, env, run_gemini

NOOP = {"type": "command", "name": "noop", "command": "cat >/dev/null; echo '{}'"}
MODES = ("plain", "noop", "hooked")


def one_run(mode: str, calls: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proj = root / "proj"
        proj.mkdir()
        for i in range(calls):
            (proj / f"f{i}.py").write_text("".join(f"line {j} of file {i}\n" for j in range(50)))
        environ = env(root, "")
        if mode == "hooked":
            assert ctxview(proj, environ, "install", "gemini").returncode == 0
        elif mode == "noop":
            (proj / ".gemini").mkdir()
            hooks = {"AfterTool": [{"matcher": ".*", "hooks": [NOOP]}],
                     "BeforeModel": [{"hooks": [NOOP]}]}  # fmt: skip
            (proj / ".gemini" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        steps: list[Any] = [Call("read_file", {"file_path": str(proj / f"f{i}.py")})
                            for i in range(calls)]  # fmt: skip
        steps += [Call("run_shell_command", {"command": f"seq 1 {i + 1}"}) for i in range(calls)]
        steps.append(Say("Done."))
        try:
            with Scripted(steps) as api:
                environ["GOOGLE_GEMINI_BASE_URL"] = api.base_url
                done = run_gemini(proj, environ, "go", timeout=600)
                assert done.returncode == 0, done.stderr
                turns = [r for r in api.requests if r["body"].get("tools")]
        finally:
            if mode == "hooked":
                stop(Path(environ["CTXVIEW_STORE"]))
        gaps = [(turns[k + 1]["at"] - turns[k]["done"]) * 1000 for k in range(len(turns) - 1)]
        return {"read": gaps[:calls], "shell": gaps[calls : 2 * calls]}


def bare_starts(n: int = 30) -> list[float]:
    """A command hook's process doing nothing: what Gemini pays for each hook before ctxview."""
    cmd = f"{shlex.quote(sys.executable)} -S -c pass"
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(cmd, shell=True, check=True)
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if not CLI.exists():
        print("npm ci --prefix tests/agents/gemini first", file=sys.stderr)
        return 1
    out = {mode: {"read": [], "shell": []} for mode in MODES}
    for _ in range(args.runs):
        for mode in MODES:
            for tool, ms in one_run(mode, args.calls).items():
                out[mode][tool] += ms[1:]  # the first call of a run starts things up
    bare = bare_starts()
    load = os.getloadavg()
    print(f"Gemini CLI 0.61.0, {args.runs} runs x {args.calls} calls per tool; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    for tool in ("read", "shell"):
        p50 = {m: statistics.median(out[m][tool]) for m in MODES}
        p95 = {m: statistics.quantiles(out[m][tool], n=20)[-1] for m in MODES}
        print(f"{tool:5} per call p50 (p95): plain {p50['plain']:6.1f} ({p95['plain']:6.1f}) ms, "
              f"two no-op hooks {p50['noop']:6.1f} ({p95['noop']:6.1f}), ctxview "
              f"{p50['hooked']:6.1f} ({p95['hooked']:6.1f}); ctxview adds "
              f"{p50['hooked'] - p50['plain']:6.1f} ({p95['hooked'] - p95['plain']:6.1f}) ms, "
              f"of which Gemini's running two hooks {p50['noop'] - p50['plain']:6.1f}")  # fmt: skip
    print(f"one bare hook process (sh -c python -S): p50 {statistics.median(bare):.1f} ms, "
          f"p95 {statistics.quantiles(bare, n=20)[-1]:.1f} ms; two per call")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
