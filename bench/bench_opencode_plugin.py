"""The time ctxview's OpenCode plugin adds per tool call, with the real OpenCode
(tests/agents/opencode) against the scripted model: the same session (N reads of one file, then
N `echo`s) plain and with `ctxview install opencode`; per call, OpenCode's own record of the
tool part (`state.time.end - start`, which spans `tool.execute.after`). p50 and p90 of each,
with the load average. Run: .venv/bin/python bench/bench_opencode_plugin.py [N]."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "agents"))
from fake_anthropic import FakeAnthropic
from opencode_helpers import OPENCODE, project


def run(hooked: bool, n: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp, project(Path(tmp)) as p:
        f = p.root / "a.py"
        f.write_text("".join(f"x{i} = {i}\n" for i in range(200)))
        steps = [{"tool": "read", "input": {"filePath": str(f), "offset": 1 + i, "limit": 50}}
                 for i in range(n)] + [{"tool": "bash", "input": {"command": f"echo {i}",
                                                                  "description": "echo"}}
                                       for i in range(n)] + [{"text": "Done."}]  # fmt: skip
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            if hooked:
                assert p.ctxview("install", "opencode").returncode == 0
            events = p.run("go")
        out: dict[str, list[float]] = {"read": [], "bash": []}
        for e in events:
            part = e.get("part") or {}
            t = (part.get("state") or {}).get("time") or {}
            if e.get("type") == "tool_use" and part.get("tool") in out and "end" in t:
                out[part["tool"]].append(float(t["end"] - t["start"]))
        return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    assert OPENCODE.exists(), "npm install --prefix tests/agents/opencode first"
    plain, hooked = run(False, n), run(True, n)
    print(f"OpenCode plugin, {n} calls per tool, load average {os.getloadavg()}")
    for tool in ("read", "bash"):
        a, b = plain[tool], hooked[tool]
        p50 = statistics.median(b) - statistics.median(a)
        print(f"  {tool}: plain p50 {statistics.median(a):.1f} ms, hooked p50 "
              f"{statistics.median(b):.1f} ms (p90 {sorted(b)[int(len(b) * 0.9) - 1]:.1f}): "
              f"the plugin adds {p50:.1f} ms p50")  # fmt: skip


if __name__ == "__main__":
    main()
