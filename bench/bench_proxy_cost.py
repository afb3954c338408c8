"""The seed's figure on real sessions: the priced cost with and without `--elide`, and the
cache breaks, per real Claude Code and Codex session of ../shared/realdata past the threshold.

    .venv/bin/python bench/bench_proxy_cost.py

None of the realdata transcripts carries Claude Code's own request records (2.1.3xx), so each
session's requests are rebuilt from its transcript. Claude Code: a request per assistant message
(records of one message id merged), its messages every user and assistant message before it
(side chains and meta records left out); a compaction's summary record starts the conversation
again from it, and a microcompaction sends the tool results it names as Claude Code's
placeholder from then on. Codex (a rollout): a request each time the model is asked (before
each run of its output items), its input every item before it (a `compacted` record's
replacement history in place of the history), its usage the next `token_count`. Model, usage
and time are the transcript's. Both replays are `context/request_cost.py`'s (the proxy's own
Elider; the prompt-cache model: a request reads what it shares with the one before it, writes
the rest, nothing read once 5 minutes passed by the recorded times; tokens as characters / 4;
output the recorded one), priced by the shipped table. The system prompt and tools are not in a
transcript: both replays leave them out. Any file of either kind is read, wherever it lies.
"""

from __future__ import annotations

import itertools
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
from ctxview.context.request_diff import TTL_SECONDS  # noqa: E402
from ctxview.context.request_elide import messages_size  # noqa: E402
from ctxview.rules.config import Config  # noqa: E402


def _ts(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


CLEARED = "[Old tool result content cleared]"  # what Claude Code sends for a microcompacted one


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _cleared(msgs: list[dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
    out = []
    for m in msgs:
        blocks = [
            {**b, "content": CLEARED}
            if isinstance(b, dict)
            and b.get("type") == "tool_result"
            and b.get("tool_use_id") in ids
            else b
            for b in m["content"]
        ]
        out.append({**m, "content": blocks})
    return out  # fmt: skip


def requests_of(path: Path) -> tuple[str, list[Sent], int]:
    """(the agent, its requests, its compactions) of a transcript; no requests for neither."""
    recs = _records(path)
    if any(r.get("type") == "response_item" for r in recs):
        return ("codex", *_codex(recs))
    return ("cc", *_claude(recs))  # Claude Code's format (Qwen Code writes it too)


def _codex(recs: list[dict[str, Any]]) -> tuple[list[Sent], int]:
    items: list[Any] = []
    sent: list[Sent] = []
    model, asked, compactions = None, True, 0
    waiting: list[int] = []  # requests without their usage yet
    for rec in recs:
        p = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
        kind = rec.get("type")
        if kind == "turn_context":
            model = p.get("model") or model
        elif kind == "compacted" and isinstance(p.get("replacement_history"), list):
            items, asked, compactions = list(p["replacement_history"]), True, compactions + 1
        elif kind == "event_msg" and p.get("type") == "token_count" and waiting:
            last = (p.get("info") or {}).get("last_token_usage")
            if isinstance(last, dict):
                usage = {"input_tokens": last.get("input_tokens", 0), "input_tokens_details":
                         {"cached_tokens": last.get("cached_input_tokens", 0)},
                         "output_tokens": last.get("output_tokens", 0)}  # fmt: skip
                for i in waiting:
                    sent[i] = Sent(sent[i].body, sent[i].ts, sent[i].model, sent[i].protocol,
                                   usage)  # fmt: skip
                waiting = []
        elif kind == "response_item" and p.get("type") != "ghost_snapshot":
            output = p.get("type") in ("reasoning", "function_call", "custom_tool_call") or (
                p.get("type") == "message" and p.get("role") == "assistant")  # fmt: skip
            if output and asked:
                waiting.append(len(sent))
                sent.append(
                    Sent(
                        {"model": model, "input": list(items)},
                        _ts(rec.get("timestamp")),
                        model,
                        "openai-responses",
                        None,
                    )
                )
                asked = False  # fmt: skip
            elif not output:
                asked = True
            items.append(p)
    return sent, compactions


def _claude(recs: list[dict[str, Any]]) -> tuple[list[Sent], int]:
    msgs: list[dict[str, Any]] = []
    sent: list[Sent] = []
    last_id = None
    compactions = 0
    for rec in recs:
        if rec.get("subtype") == "microcompact_boundary":
            meta = rec.get("microcompactMetadata") or {}
            msgs = _cleared(msgs, set(meta.get("compactedToolIds") or []))
            continue
        if rec.get("isSidechain") or rec.get("isMeta"):
            continue
        m = rec.get("message")
        if rec.get("type") not in ("user", "assistant") or not isinstance(m, dict):
            continue
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if rec.get("isCompactSummary"):  # the conversation starts again from the summary
            msgs, last_id, compactions = (
                [{"role": "user", "content": blocks}],
                None,
                compactions + 1,
            )
            continue
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
    return sent, compactions


def main() -> None:
    config = Config()
    threshold = int(config["elide.threshold_chars"])
    table = load_prices(Path("/nonexistent"))
    files = sorted(REALDATA.rglob("*.jsonl"))
    print(f"load average {os.getloadavg()}; prices of {table.date}; {len(files)} files")
    print(f"{'SESSION':52} {'AGENT':6} {'REQS':>5} {'PAST':>5} {'PEAK KB':>8} {'COMP':>4} "
          f"{'BREAKS N/E':>10} {'TTL':>4} {'NATIVE $':>9} {'ELIDED $':>9} {'RATIO':>6} "
          f"{'BILLED $':>9}")  # fmt: skip
    ratios = []
    below = []
    for f in files:
        agent, sent, compactions = requests_of(f)
        if not sent:
            continue
        key = "input" if agent == "codex" else "messages"
        sizes = [messages_size(s.body[key]) for s in sent]
        name = str(f.relative_to(REALDATA))
        if max(sizes) <= threshold:
            below.append(
                f"{name[:60]} ({agent}, {len(sent)} requests, peak {max(sizes) // 1000} KB)"
            )
            continue
        bodies = [s.body for s in sent]
        native = replay(bodies, sent, table)
        with_e = replay(elided(bodies, config), sent, table)
        ttl = _expired(sent)
        paid = sum(c for s in sent if (c := billed(s, table)) is not None)
        ratio = with_e.cost / native.cost if native.cost else float("nan")
        ratios.append(ratio)
        print(f"{name[:52]:52} {agent:6} {len(sent):5} {sum(z > threshold for z in sizes):5} "
              f"{max(sizes) // 1000:8} {compactions:4} {native.breaks:>4}/{with_e.breaks:<5} "
              f"{ttl:4} {native.cost:9.3f} {with_e.cost:9.3f} x{ratio:5.2f} {paid:9.3f}")  # fmt: skip
    if ratios:
        ratios.sort()
        print(
            f"{len(ratios)} sessions past the threshold; ratio median x{ratios[len(ratios) // 2]:.2f}, "
            f"range x{ratios[0]:.2f}-x{ratios[-1]:.2f} (the seed: x0.74 on long sessions)"
        )
    print("PAST: requests past the threshold; COMP: compactions; BREAKS: native/elided, TTL of "
          "them the 5-minute lifetime passing (in both)")  # fmt: skip
    print(f"under the threshold ({len(below)}): " + "; ".join(below))
    print(f"load average {os.getloadavg()}")


def _expired(sent: list[Sent]) -> int:
    return sum(1 for a, b in itertools.pairwise(sent)
               if a.ts is not None and b.ts is not None and b.ts - a.ts > TTL_SECONDS)  # fmt: skip


if __name__ == "__main__":
    main()
