"""A small session in Claude Code's shape: Markdown messages, thinking, a tool-only turn, the
common tools' calls (TodoWrite, Task with its sub-agent, ExitPlanMode, AskUserQuestion,
WebFetch, WebSearch, Write, an unknown tool), an image, a long output and a compaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from store_fixture import STARTED

from ctxview.engine.session import Session
from ctxview.store import Writer

MARKDOWN = """### **Current Configuration Files**

The *store* keeps **every** result; see [the spec](https://example.org/spec) and `ctxview show`.

- first point
- second point
  1. nested one
  2. nested two

> A quoted line.

```python
def total(items: list[int]) -> int:
    return sum(items)  # the whole cart
```

| file | lines |
|------|------:|
| app.py | 120 |
| util.py | 8 |

Done."""

THINKING = "The user wants the cart fixed.\nFirst read app.py, then the tests.\nzebra-thought"
PLAN = "## Plan\n\n1. Read the cart code\n2. Fix the **total**\n3. Run the tests"
PROMPT = "Explore the repository.\n\n- list the modules\n- **summarise** each one\n" + "\n".join(
    f"- detail {i}" for i in range(12)
)
WRITTEN = "def hello(name: str) -> str:\n    return f'Hello {name}'\n"
LONG = "\n".join(f"line {i}: ok" for i in range(1500)).replace(
    "line 900: ok", "line 900: the needle is here"
)


@dataclass
class Readable:
    store: Path
    session_id: str
    child_id: str
    ids: dict[str, int] = field(default_factory=dict)


async def make(tmp: Path) -> Readable:
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    store = tmp / "store.db"
    ids: dict[str, int] = {}
    t = STARTED
    async with await Writer.open(store) as writer:
        s = await Session.start(writer, ws, title="readable", session_id="s-read",
                                started=STARTED, source="claude-code")  # fmt: skip

        async def call(tool: str, args: dict[str, object], out: str, name: str) -> None:
            nonlocal t
            t += 1
            await s.insert(tool, args, out, call_ref=f"call-{name}", ts=t)
            ids[name] = s.last.rid  # type: ignore[union-attr]

        await s.message("user", "Fix the cart total, please.", ts=t)
        await s.message("assistant", MARKDOWN, ts=t, data={"thinking": THINKING})
        await s.message("assistant", "", ts=t)  # a turn of tool calls only
        await call("TodoWrite", {"todos": [
            {"content": "Read the cart code", "status": "completed", "activeForm": "Reading"},
            {"content": "Fix the total", "status": "in_progress", "activeForm": "Fixing"},
            {"content": "Run the tests", "status": "pending", "activeForm": "Running"},
        ]}, "Todos have been modified successfully.", "todo")  # fmt: skip
        await call("Task", {"description": "Explore the codebase", "subagent_type": "Explore",
                            "prompt": PROMPT}, "The repository has three modules.", "task")  # fmt: skip
        await call("ExitPlanMode", {"plan": PLAN}, "User has approved your plan.", "plan")
        await call("AskUserQuestion", {"questions": [{
            "question": "Which total do you mean?", "header": "Total", "multiSelect": False,
            "options": [{"label": "Cart", "description": "the basket's sum"},
                        {"label": "Order", "description": "after shipping"}]}]},
            "User answered: Cart", "ask")  # fmt: skip
        await call("WebFetch", {"url": "https://example.org/cart", "prompt": "How is it summed?"},
                   "It is summed per line.", "fetch")  # fmt: skip
        await call("WebSearch", {"query": "cart total rounding"}, "3 results", "websearch")
        await call("Write", {"file_path": "src/hello.py", "content": WRITTEN},
                   "File created successfully at: src/hello.py", "write")  # fmt: skip
        await call("mcp__db__query", {"sql": "SELECT *\nFROM carts\nWHERE total > 100",
                                      "database": "shop"}, "2 rows", "mcp")  # fmt: skip
        await s.message("user", "Here is a screenshot:\n[image image/png, 40000 bytes base64]",
                        ts=t)  # fmt: skip
        await call("bash", {"command": "pytest -q"}, LONG, "long")
        await s.compact("Summary: the okapi total was fixed.", ts=t + 1)
        await s.message("assistant", "All done.", ts=t + 2)
        child = await Session.start(writer, ws, title="Explore the codebase", session_id="s-sub",
                                    started=STARTED + 1, source="claude-code",
                                    parent_session="s-read", parent_call="call-task")  # fmt: skip
        await child.message("user", PROMPT, ts=STARTED + 2)
        await child.insert("bash", {"command": "ls"}, "app.py\nutil.py", ts=STARTED + 3)
        await child.message("assistant", "The repository has three modules.", ts=STARTED + 4)
    return Readable(store, "s-read", "s-sub", ids)
