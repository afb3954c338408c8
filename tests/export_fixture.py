"""A store for the export tests: a session with a sub-agent, a compaction, a capped result,
stubs and a recall, and planted secrets spread over every field an export writes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from export_secrets import LOOKALIKES, SECRETS

from ctxview.store import Writer
from ctxview.store.records import Body, Event

MAIN = "sess-secrets"
AGENT = "sess-secrets-agent"
FIRST = 0x2000


def _result(ts: float, tool: str, ref: str, rid: int, shown: str, stored: str, **kw: object
            ) -> tuple[Event, Body]:  # fmt: skip
    ev = Event(ts=ts, kind="result", tool=tool, call_ref=ref, rid=rid, shown_chars=len(shown),
               shown_lines=shown.count("\n") + 1, stored_chars=len(stored),
               stored_lines=stored.count("\n") + 1, **kw)  # type: ignore[arg-type]  # fmt: skip
    return ev, Body(rid, shown, stored)


async def build(path: Path) -> dict[str, str]:
    """The store; returns field -> the text planted there (every secret is in one field)."""
    secrets = [s for _, s in SECRETS]
    fields = ["title", "workspace", "path", "args", "result", "stored", "message", "thinking",
              "summary", "table", "agent_title", "agent_result"]  # fmt: skip
    planted: dict[str, list[str]] = {f: [] for f in fields}
    for i, s in enumerate(secrets):
        planted[fields[i % len(fields)]].append(s)
    look = " ".join(LOOKALIKES)

    def text(field: str) -> str:
        return f"{field}: " + " | ".join(planted[field]) + f" ({look})"

    writer = await Writer.open(path)
    await writer.create_session(MAIN, title=" ".join(planted["title"]) + " fix the cart",
                                workspace="/work/" + " ".join(planted["workspace"]),
                                next_rid=FIRST, started=1_764_000_000.0)  # fmt: skip
    t = 1_764_000_000.0
    rid = FIRST
    path_secret = "src/" + "/".join(p.replace("/", "_").replace(" ", "_")[:60]
                                    for p in planted["path"]) + ".py"  # fmt: skip
    events: list[Event] = [
        Event(ts=t, kind="message", role="user", text="Please fix it. " + look),
        Event(ts=t, kind="message", role="assistant", text=text("message"),
              data=json.dumps({"thinking": text("thinking"), "usage": {"input_tokens": 5}})),
        Event(ts=t, kind="call", tool="read", call_ref="c1", args=json.dumps({"path": path_secret})),
    ]  # fmt: skip
    ev, body = _result(t, "read", "c1", rid, f"[#{rid:04x} {path_secret} lines 1-2 of 2 sha "
                       f"9f86d081]\n1: {text('result')}\n2: done", f"1: {text('result')}\n2: done",
                       path=path_secret, rkind="full", sha="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")  # fmt: skip
    events.append(ev)
    await writer.append(MAIN, events, [body])
    rid += 1
    # A capped bash result: a secret only in the elided middle of the stored text.
    stored_lines = [f"line {i}" for i in range(100)]
    stored_lines[50] = text("stored")
    stored = "\n".join(stored_lines)
    shown = (f"[#{rid:04x}]\n" + "\n".join(stored_lines[:5]) + f"\n[90 lines elided, full output "
             f"#{rid:04x}]\n" + "\n".join(stored_lines[95:]))  # fmt: skip
    call = Event(ts=t, kind="call", tool="bash", call_ref="c2",
                 args=json.dumps({"command": text("args")}))  # fmt: skip
    ev, body = _result(t, "bash", "c2", rid, shown, stored, rkind="full", capped=1,
                       elided_lines=90)  # fmt: skip
    await writer.append(MAIN, [call, ev], [body])
    bash_rid = rid
    rid += 1
    summary = text("summary")
    table = [{"path": "src/" + p.replace("/", "_")[:80], "first": 1, "last": 2, "total": 2,
              "sha": "9f86d081884c7d659a2f", "rid": FIRST} for p in planted["table"]]  # fmt: skip
    await writer.append(MAIN, [Event(ts=t, kind="compaction", text=summary,
                                     data=json.dumps({"rows": table, "inserted": summary}))])  # fmt: skip
    # After the boundary: a message naming both results (links now say "not in context").
    await writer.append(MAIN, [Event(ts=t, kind="message", role="assistant",
                                     text=f"Before the summary: #{FIRST:04x} and #{bash_rid:04x}.")])  # fmt: skip
    # A task call that starts the sub-agent, and a stub.
    call = Event(ts=t, kind="call", tool="task", call_ref="task-1",
                 args=json.dumps({"description": "look around"}))  # fmt: skip
    ev, body = _result(t, "task", "task-1", rid, f"[#{rid:04x}]\nthe agent is done",
                       "the agent is done", rkind="full")  # fmt: skip
    await writer.append(MAIN, [call, ev], [body])
    rid += 1
    call = Event(ts=t, kind="call", tool="read", call_ref="c3", args=json.dumps({"path": "a.py"}))
    ev, body = _result(t, "read", "c3", rid, f"[#{rid:04x} a.py lines 1-2 of 2 sha 9f86d081] "
                       f"Unchanged since #{FIRST:04x}; the same text as there.", "1: x\n2: y",
                       rkind="unchanged", points_to=FIRST, path="a.py")  # fmt: skip
    await writer.append(MAIN, [call, ev, Event(ts=t, kind="end")], [body])
    await writer.create_session(AGENT, title=" ".join(planted["agent_title"]) + " look around",
                                next_rid=FIRST, started=t + 1, parent_session=MAIN,
                                parent_call="task-1")  # fmt: skip
    call = Event(ts=t, kind="call", tool="grep", call_ref="a1",
                 args=json.dumps({"pattern": "cart"}))  # fmt: skip
    ev, body = _result(t, "grep", "a1", FIRST, f"[#{FIRST:04x}]\n{text('agent_result')}",
                       text("agent_result"), rkind="full")  # fmt: skip
    await writer.append(AGENT, [call, ev], [body])
    await writer.update_session(MAIN, ended=t + 5)
    await writer.update_session(AGENT, ended=t + 4)
    await writer.close()
    return {f: " ".join(v) for f, v in planted.items()}


def make(path: Path) -> dict[str, str]:
    return asyncio.run(build(path))


ROW = "\x1e"  # between the rows of the files-read table in build_fields
FIELDS = ("title", "workspace", "prompt", "path", "args", "result", "stored", "message",
          "thinking", "summary", "table", "agent_title", "agent_result")  # fmt: skip


async def build_fields(path: Path, texts: dict[str, str]) -> None:
    """A session (MAIN, with the sub-agent AGENT) whose every field an export writes holds
    texts[field] as it is: a title, a workspace, a prompt, a read's path and body, a command,
    a capped result's elided middle, a message, its thinking, a compaction's summary and
    files-read table (a row for each part of texts["table"] between ROW marks), a sub-agent's
    title and result."""
    t = 1_764_000_000.0
    writer = await Writer.open(path)
    await writer.create_session(MAIN, title=texts["title"], workspace=texts["workspace"],
                                next_rid=FIRST, started=t)  # fmt: skip
    read = texts["path"]
    body = "\n".join(f"{n}: {line}" for n, line in enumerate(texts["result"].split("\n"), 1))
    shown = f"[#{FIRST:04x} src/app.py lines 1-2 of 2 sha 9f86d081]\n{body}"
    ev, b = _result(t, "read", "c1", FIRST, shown, body, path=read, rkind="full")
    await writer.append(MAIN, [
        Event(ts=t, kind="message", role="user", text=texts["prompt"]),
        Event(ts=t, kind="message", role="assistant", text=texts["message"],
              data=json.dumps({"thinking": texts["thinking"]})),
        Event(ts=t, kind="call", tool="read", call_ref="c1", args=json.dumps({"path": read})),
        ev,
    ], [b])  # fmt: skip
    middle = texts["stored"].split("\n")
    stored = "\n".join(["head 1", "head 2", *middle, "tail 1", "tail 2"])
    rid = FIRST + 1
    shown = (f"[#{rid:04x}]\nhead 1\nhead 2\n[{len(middle)} lines elided, full output "
             f"#{rid:04x}]\ntail 1\ntail 2")  # fmt: skip
    call = Event(ts=t, kind="call", tool="bash", call_ref="c2",
                 args=json.dumps({"command": texts["args"]}))  # fmt: skip
    ev, b = _result(t, "bash", "c2", rid, shown, stored, rkind="full", capped=1,
                    elided_lines=len(middle))  # fmt: skip
    await writer.append(MAIN, [call, ev], [b])
    rows = [{"path": p, "first": 1, "last": 2, "total": 2, "sha": "9f86d081884c7d659a2f",
             "rid": FIRST} for p in texts["table"].split(ROW)]  # fmt: skip
    await writer.append(MAIN, [Event(ts=t, kind="compaction", text=texts["summary"],
                                     data=json.dumps({"rows": rows}))])  # fmt: skip
    rid += 1
    call = Event(ts=t, kind="call", tool="task", call_ref="task-1",
                 args=json.dumps({"description": "look around"}))  # fmt: skip
    ev, b = _result(t, "task", "task-1", rid, f"[#{rid:04x}]\ndone", "done", rkind="full")
    await writer.append(MAIN, [call, ev, Event(ts=t, kind="end")], [b])
    await writer.create_session(AGENT, title=texts["agent_title"], next_rid=FIRST, started=t + 1,
                                parent_session=MAIN, parent_call="task-1")  # fmt: skip
    call = Event(ts=t, kind="call", tool="grep", call_ref="a1", args='{"pattern": "x"}')
    ev, b = _result(t, "grep", "a1", FIRST, f"[#{FIRST:04x}]\n{texts['agent_result']}",
                    texts["agent_result"], rkind="full")  # fmt: skip
    await writer.append(AGENT, [call, ev], [b])
    await writer.update_session(MAIN, ended=t + 5)
    await writer.update_session(AGENT, ended=t + 4)
    await writer.close()
