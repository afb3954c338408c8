"""The time ctxview's Gemini CLI hooks add per tool call, with the real Gemini CLI
(tests/agents/gemini) against the scripted Gemini API, and whose time it is: one `gemini -p`
run of N tool calls (reads of N files, then N `run_shell_command`s) per variant, the variants
interleaved run by run. A call's time is the gap between the model server's answer naming the
call and Gemini's next request; a figure is a variant's p50 minus the one below it:

- `plain`: no hooks;
- `noop1`: an `AfterTool` command hook that does nothing (`:`, a bash builtin): Gemini's own
  price for running a command hook (it always spawns `bash -c COMMAND`);
- `noop2`: the same on `BeforeModel` too (Gemini 0.61 runs it before every model call, with no
  matcher);
- `python2`: both hooks `python -S -c pass`: a bare Python start in each;
- `tail`: an `AfterTool` hook that answers a fixed tail call of ctxview's `show` (bash's
  `printf`, no engine), with ctxview's MCP server: Gemini's tail call and its MCP round trip;
- `floor`: `tail` and a `BeforeModel` hook that does nothing: all that Gemini's own part of
  `hooked` costs;
- `after`: ctxview's `AfterTool` hook alone (`ctxview install gemini`, its BeforeModel taken out):
  the hook client and the resident engine, above `tail`;
- `hooked`: `ctxview install gemini` as it is (the bash client, `gemini/hook_client.sh`, over
  http);
- `pyclient`: the install as it was before the bash client (the Python client in every hook,
  BeforeModel's request read by `cat`), above `hooked`;
- `unfiltered`: the install as it was before (every hook `python -S hook_client.py`, run as a
  script, and BeforeModel's request handed to the engine whatever it holds), above `hooked`.

The engine's own time per hook (its trace, `<store>.hook-trace.jsonl`: from the request's first
byte to the answer sent) is printed beside.

    .venv/bin/python bench/bench_gemini_hooks.py [--calls 30] [--runs 3] [--modes plain,hooked]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxview.agents import hook_client, hook_trace
from ctxview.agents.gemini import install
from ctxview.agents.gemini.compression import ACK_JSON
from ctxview.agents.gemini.engine import SHOW_TOOL
from ctxview.agents.hook_client import stop
from tests.agents.fake_gemini import Call, Say, Scripted
from tests.agents.gemini_helpers import CLI, ctxview, env, run_gemini

MODES = (
    "plain",
    "noop1",
    "noop2",
    "python2",
    "tail",
    "floor",
    "after",
    "hooked",
    "pyclient",
    "unfiltered",
)
INSTALLED = ("after", "hooked", "pyclient", "unfiltered")
TAIL = json.dumps({"hookSpecificOutput": {"hookEventName": "AfterTool", "tailToolCallRequest": {
    "name": SHOW_TOOL, "args": {"text": "[#1000] shown", "ref": "bench"}}}})  # fmt: skip


def _hook(command: str) -> dict[str, Any]:
    return {"type": "command", "name": "bench", "command": command}


def _settings(mode: str) -> dict[str, Any]:
    """The project settings of a variant that ctxview's install does not write."""
    after = {"matcher": install.MATCHERS["AfterTool"]}
    if mode == "noop1":
        return {"hooks": {"AfterTool": [{**after, "hooks": [_hook(":")]}]}}
    if mode == "noop2":
        return {"hooks": {"AfterTool": [{**after, "hooks": [_hook(":")]}],
                          "BeforeModel": [{"hooks": [_hook(":")]}]}}  # fmt: skip
    if mode == "python2":
        bare = _hook(f"{shlex.quote(sys.executable)} -S -c pass")
        return {"hooks": {"AfterTool": [{**after, "hooks": [bare]}],
                          "BeforeModel": [{"hooks": [bare]}]}}  # fmt: skip
    if mode in ("tail", "floor"):
        hooks: dict[str, Any] = {
            "AfterTool": [{**after, "hooks": [_hook(f"printf %s {shlex.quote(TAIL)}")]}]}  # fmt: skip
        if mode == "floor":
            hooks["BeforeModel"] = [{"hooks": [_hook(":")]}]
        return {"hooks": hooks, "mcpServers": {install.SERVER: install.show_server()}}
    return {}


def one_run(mode: str, calls: int) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proj = root / "proj"
        proj.mkdir()
        for i in range(calls):
            (proj / f"f{i}.py").write_text("".join(f"line {j} of file {i}\n" for j in range(50)))
        environ = env(root, "")
        store = Path(environ["CTXVIEW_STORE"])
        settings = proj / ".gemini" / "settings.json"
        if mode in INSTALLED:
            assert ctxview(proj, environ, "install", "gemini").returncode == 0
            data = json.loads(settings.read_text())
            if mode == "after":
                del data["hooks"]["BeforeModel"]
            if mode == "pyclient":
                py = install.python_command(store)
                for event, groups in data["hooks"].items():
                    groups[0]["hooks"][0]["command"] = py if event != "BeforeModel" else (
                        f"d=$(cat); case $d in *{shlex.quote(ACK_JSON)}*) exec {py} "
                        '<<<"$d";; esac')  # fmt: skip
            if mode == "unfiltered":
                old = shlex.join([sys.executable, "-S", hook_client.__file__, "gemini", "--store",
                                  str(store)])  # fmt: skip
                for groups in data["hooks"].values():
                    for group in groups:
                        group["hooks"][0]["command"] = old
            settings.write_text(json.dumps(data))
        elif mode != "plain":
            settings.parent.mkdir()
            settings.write_text(json.dumps(_settings(mode)))
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
            if mode in INSTALLED:
                stop(store)  # its traces saved as it exits
        gaps = [(turns[k + 1]["at"] - turns[k]["done"]) * 1000 for k in range(len(turns) - 1)]
        assert len(gaps) >= 2 * calls, f"{mode}: {len(gaps)} calls of {2 * calls}"
        return {"read": gaps[:calls], "shell": gaps[calls : 2 * calls]}, hook_trace.read(store)


def _p(values: list[float], q: int) -> float:
    return statistics.median(values) if q == 50 else statistics.quantiles(values, n=20)[-1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    modes = [m for m in MODES if m in args.modes.split(",")]
    if not CLI.exists():
        print("npm ci --prefix tests/agents/gemini first", file=sys.stderr)
        return 1
    out: dict[str, dict[str, list[float]]] = {m: {"read": [], "shell": []} for m in modes}
    engine: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for mode in modes:  # interleaved: the machine's drift falls on every variant alike
            gaps, traces = one_run(mode, args.calls)
            for tool, ms in gaps.items():
                out[mode][tool] += ms[1:]  # the first call of a run starts things up
            if mode == "hooked":
                for t in traces:
                    engine.setdefault(str(t.get("event")), []).append(float(t["answered"]))
    load = os.getloadavg()
    print(f"Gemini CLI 0.61.0, {args.runs} runs x {args.calls} calls per tool; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
    for tool in ("read", "shell"):
        print(f"{tool}: per call p50 (p95) ms, and p50 above the variant before")
        last = None
        for mode in modes:
            p50, p95 = _p(out[mode][tool], 50), _p(out[mode][tool], 95)
            above = "" if last is None else f"  {p50 - last:+6.1f}"
            print(f"  {mode:8} {p50:6.1f} ({p95:6.1f}){above}")
            last = p50
        if "plain" in modes and "hooked" in modes:
            added = _p(out["hooked"][tool], 50) - _p(out["plain"][tool], 50)
            print(f"  ctxview adds {added:.1f} ms p50 per call")
    for event, ms in sorted(engine.items()):
        print(
            f"engine (hooked), {event}: p50 {statistics.median(ms):.2f} ms, "
            f"p95 {_p(ms, 95) if len(ms) > 1 else ms[0]:.2f} ms over {len(ms)} hooks"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
