"""Import speed per session format, MB/s, beside Claude Code's (issue 19's figure).

    .venv/bin/python bench/bench_import_formats.py [--mb 8]

Each format's input is built in a temp dir to about --mb megabytes from a real or built source:
the real pi session (pi-mono/before-compaction.jsonl), the real Gemini CLI document
(aim/matrix_pro_run4_success.json), the real aider history (aider/chat-history.md) and the real
Claude Code transcript (claude-code-log's coderabbit session), repeated with fresh ids; Copilot
CLI, Cursor and OpenCode (storage/ and SQLite) from the built fixtures of tests/fixtures, repeated
the same way (no real file of theirs is big enough). Each is imported into a fresh store in this
process (`ctxview import`'s path: one batched import); the figure is the source's bytes over the
wall time. The machine is shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDATA = ROOT.parent / "shared" / "realdata"
FIX = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(ROOT / "tests"))

from ctxview.importers.runner import FileImporter  # noqa: E402
from ctxview.store import Writer  # noqa: E402

_IDS = re.compile(r'"(id|toolCallId|callID|tool_use_id|uuid|parentUuid|messageId|sessionId)":"')


def _fresh(line: str, n: int) -> str:
    """A JSON line whose ids are made unique to copy `n` (a prefix on every id value)."""
    return _IDS.sub(lambda m: f'"{m.group(1)}":"r{n}-', line)


def _repeat_lines(src: Path, out: Path, mb: float, keep_head: int = 1) -> Path:
    lines = src.read_text().splitlines()
    head, body = lines[:keep_head], lines[keep_head:]
    target = mb * 1e6
    with open(out, "w") as f:
        f.write("\n".join(head) + "\n")
        n = 0
        while f.tell() < target:
            f.write("\n".join(_fresh(json.dumps(json.loads(x), separators=(",", ":")), n)
                              for x in body if x.strip()) + "\n")  # fmt: skip
            n += 1
    return out


def _gemini(out: Path, mb: float) -> Path:
    doc = json.loads((REALDATA / "aim" / "matrix_pro_run4_success.json").read_text())
    msgs = doc["messages"]
    size = len(json.dumps(doc))
    copies = max(1, int(mb * 1e6 / size))
    doc["messages"] = [json.loads(_fresh(json.dumps(m, separators=(",", ":")), n))
                       for n in range(copies) for m in msgs]  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2))
    return out


def _aider(out: Path, mb: float) -> Path:
    text = (REALDATA / "aider" / "chat-history.md").read_text()
    parts = []
    n = 0
    while sum(map(len, parts)) < mb * 1e6:
        # Each copy's sessions start another year, so their keys differ.
        parts.append(re.sub(r"^# aider chat started at 2024", f"# aider chat started at {2100 + n}",
                            text, flags=re.M))  # fmt: skip
        n += 1
    out.write_text("".join(parts))
    return out


def _opencode(work: Path, mb: float, sqlite: bool) -> Path:
    root = work / "storage"
    src = FIX / "opencode" / "storage"
    n = 0
    size = 0
    while size < mb * 1e6:
        for f in src.rglob("*.json"):
            rel = f.relative_to(src)
            parts = [p.replace("ses_", f"ses_{n:05d}").replace("msg_", f"msg_{n:05d}")
                     .replace("prt_", f"prt_{n:05d}") for p in rel.parts]  # fmt: skip
            text = f.read_text()
            text = re.sub(r'"(ses|msg|prt)_', rf'"\1_{n:05d}', text)
            dest = root.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            size += len(text)
        n += 1
    if not sqlite:
        return root
    from opencode_db import build_db

    return build_db(root, work / "opencode.db")


def _bytes(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size


async def _import(source: Path, store: Path) -> float:
    async with await Writer.open(store) as writer, writer.batch():
        t = time.perf_counter()
        await FileImporter(writer, source).step()
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=8.0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctxview-bench-formats-"))
    claude = REALDATA / "claude-code-log" / "-Users-dain-workspace-coderabbit-review-helper" / \
        "cb2e607c-c758-415a-8b45-c49e4631906a.jsonl"  # fmt: skip
    cursor = next(p for p in (FIX / "cursor").rglob("*.jsonl") if p.parent.name != "subagents")
    builds = {
        "claude-code": lambda d: _repeat_lines(claude, d / "c.jsonl", args.mb, keep_head=0),
        "pi": lambda d: _repeat_lines(REALDATA / "pi-mono" / "before-compaction.jsonl",
                                      d / "p.jsonl", args.mb),
        "gemini-cli (json)": lambda d: _gemini(d / "chats" / "session-x.json", args.mb),
        "copilot-cli": lambda d: _repeat_lines(next((FIX / "copilot").rglob("events.jsonl")),
                                               d / "events.jsonl", args.mb),
        "cursor": lambda d: _repeat_lines(cursor, d / "x.jsonl", args.mb, keep_head=0),
        "opencode (storage/)": lambda d: _opencode(d, args.mb, sqlite=False),
        "opencode (sqlite)": lambda d: _opencode(d, args.mb, sqlite=True),
        "aider": lambda d: _aider(d / ".aider.chat.history.md", args.mb),
    }  # fmt: skip
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'format':22} {'MB':>7} {'seconds':>8} {'MB/s':>7}")
    try:
        for name, build in builds.items():
            d = work / re.sub(r"\W+", "-", name)
            d.mkdir()
            source = build(d)
            size = _bytes(source)
            secs = asyncio.run(_import(source, d / "store.db"))
            print(f"{name:22} {size / 1e6:7.2f} {secs:8.2f} {size / 1e6 / secs:7.2f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
