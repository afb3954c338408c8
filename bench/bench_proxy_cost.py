"""The seed's figure on real sessions: the priced cost with and without `--elide`, and the
cache breaks, per real Claude Code session of ../shared/realdata past the threshold.

    .venv/bin/python bench/bench_proxy_cost.py

None of the realdata transcripts carries Claude Code's own request records (2.1.3xx), so each
session's requests are rebuilt from the transcript: a request per assistant message (records
of one message id merged), its messages every user and assistant message before it (side
chains and meta records left out), its model, usage and time the transcript's. Both replays
are `context/request_cost.py`'s (the proxy's own Elider; the prompt-cache model with the
5-minute lifetime; tokens as characters / 4; output the recorded one), priced by the shipped
table. The system prompt and tools are not in a transcript: both replays leave them out.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from datetime import datetime  # noqa: E402

from realdata import REALDATA  # noqa: E402

from ctxview.context.request_cost import Sent, billed, elided, load_prices, replay  # noqa: E402
from ctxview.context.request_elide import messages_size  # noqa: E402
from ctxview.rules.config import Config  # noqa: E402


def _ts(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def requests_of(path: Path) -> list[Sent]:
    msgs: list[dict[str, Any]] = []
    sent: list[Sent] = []
    last_id = None
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("isSidechain") or rec.get("isMeta"):
            continue
        m = rec.get("message")
        if rec.get("type") not in ("user", "assistant") or not isinstance(m, dict):
            continue
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if rec["type"] == "assistant":
            if m.get("id") and m.get("id") == last_id and msgs:
                msgs[-1] = {**msgs[-1], "content": [*msgs[-1]["content"], *blocks]}
                continue
            last_id = m.get("id")
            body = {"model": m.get("model"), "messages": list(msgs)}
            sent.append(Sent(body, _ts(rec.get("timestamp")), m.get("model"),
                             "anthropic-messages", m.get("usage")))  # fmt: skip
            msgs.append({"role": "assistant", "content": blocks})
        else:
            if msgs and msgs[-1]["role"] == "user":
                msgs[-1] = {**msgs[-1], "content": [*msgs[-1]["content"], *blocks]}
            else:
                msgs.append({"role": "user", "content": blocks})
    return sent


def main() -> None:
    config = Config()
    table = load_prices(Path("/nonexistent"))
    files = sorted(p for p in REALDATA.rglob("*.jsonl") if "claude" in str(p).lower())
    print(f"load average {os.getloadavg()}; prices of {table.date}; {len(files)} Claude Code files")
    print(f"{'SESSION':60} {'REQS':>5} {'PEAK KB':>8} {'NATIVE $':>9} {'ELIDED $':>9} "
          f"{'RATIO':>6} {'BREAKS N/E':>10} {'BILLED $':>9}")  # fmt: skip
    ratios = []
    for f in files:
        sent = requests_of(f)
        if not sent:
            continue
        peak = messages_size(sent[-1].body["messages"])
        if peak <= int(config["elide.threshold_chars"]):
            continue
        bodies = [s.body for s in sent]
        native = replay(bodies, sent, table)
        with_e = replay(elided(bodies, config), sent, table)

        paid = sum(c for s in sent if (c := billed(s, table)) is not None)
        ratio = with_e.cost / native.cost if native.cost else float("nan")
        ratios.append(ratio)
        name = str(f.relative_to(REALDATA))[:60]
        print(f"{name:60} {len(sent):5} {peak // 1000:8} {native.cost:9.3f} {with_e.cost:9.3f} "
              f"x{ratio:5.2f} {native.breaks:>4}/{with_e.breaks:<5} {paid:9.3f}")  # fmt: skip
    if ratios:
        ratios.sort()
        print(
            f"{len(ratios)} sessions past the threshold; ratio median x{ratios[len(ratios) // 2]:.2f}, "
            f"range x{ratios[0]:.2f}-x{ratios[-1]:.2f} (the seed: x0.74 on long sessions)"
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
