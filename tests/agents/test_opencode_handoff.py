"""The plugin's hand-off to the engine with the real OpenCode (1.18.33): the engine's answer is
read by a worker thread of the plugin's own while OpenCode's thread waits for it, so it is in
place before OpenCode's event loop turns again (after a `bash` that loop has work of its own the
answer used to wait behind); an engine that takes the request and never answers costs the call
its budget, and OpenCode's own output goes to the model, the failure recorded."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic
from opencode_helpers import OPENCODE, Project, needs_opencode, project, tool_results

from ctxview.agents.engine_socket import socket_file

pytestmark = [needs_opencode, pytest.mark.e2e]

# A plugin of the test's own, loaded before ctxview's (OpenCode runs plugins' hooks one after
# another, in the order it loads them: the user's folder before the project's): at each tool.execute.after it notes whether the output
# is ctxview's already (it must not be: this hook runs first), and on the event loop's next turn
# (setImmediate) whether it is ctxview's by then.
TURN_JS = """
import { appendFileSync } from "node:fs"
const OUT = OUT_PATH
const ours = (output) => typeof output.output === "string" && output.output.startsWith("[#")
export const TurnPlugin = async () => ({
  "tool.execute.after": async (input, output) => {
    const before = ours(output)
    setImmediate(() => {
      appendFileSync(OUT, JSON.stringify({ call: input.callID, before, turn: ours(output) }) + "\\n")
    })
  },
})
"""


def test_a_bash_calls_answer_is_in_place_before_opencodes_loop_turns(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        f = p.root / "a.py"
        f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
        steps = [
            {"tool": "read", "input": {"filePath": str(f)}},  # the engine started, the plugin warm
            *({"tool": "bash", "input": {"command": f"echo {i}", "description": "echo"}}
              for i in range(3)),
            {"text": "Done."},
        ]  # fmt: skip
        out = p.root.parent / "turns.jsonl"
        with FakeAnthropic(steps) as api:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            folder = p.home / ".config" / "opencode" / "plugin"
            folder.mkdir(parents=True)
            (folder / "turn.js").write_text(TURN_JS.replace("OUT_PATH", json.dumps(str(out))))
            p.run("go")
        got = tool_results(api.main_requests[-1])
        assert all(got[f"toolu_000{k}_bash"].startswith(f"[#100{k - 1}]") for k in (2, 3, 4)), got
        turns = {x["call"]: x for x in map(json.loads, out.read_text().splitlines())}
        bash = [turns[f"toolu_000{k}_bash"] for k in (2, 3, 4)]
        assert not any(x["before"] for x in bash), turns  # the test's hook ran before ctxview's
        assert all(x["turn"] for x in bash), turns


@contextmanager
def _fake_engine(folder: Path,
                 then: Callable[[list[socket.socket]], None]) -> Iterator[list[bytes]]:  # fmt: skip
    """A socket in a private folder that accepts every connection and reads its request (the
    plugin shuts its side once it has sent), then calls `then` with the connections held so far
    (newest last; each kept open until the test ends unless `then` closes it); the requests it
    took."""
    folder.mkdir(mode=0o700)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(folder / "engine.sock"))
    server.listen()
    taken: list[bytes] = []
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return  # closed: the test is over
            held.append(conn)
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            taken.append(data)
            then(held)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield taken
    finally:
        server.close()
        for conn in held:
            conn.close()
        thread.join(5)


def _holding_engine(folder: Path) -> AbstractContextManager[list[bytes]]:
    """An engine that takes every request and never answers."""
    return _fake_engine(folder, lambda held: None)


def _pointed_at(p: Project, where: Path) -> None:
    plugin = p.root / ".opencode" / "plugin" / "ctxview.js"
    text = plugin.read_text()
    real = json.dumps(socket_file(str(p.store)))
    assert real in text
    plugin.write_text(text.replace(real, json.dumps(str(where))))


def test_an_engine_that_never_answers_lets_opencodes_own_output_through(tmp_path: Path) -> None:
    with project(tmp_path) as p:
        f = p.root / "a.py"
        f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
        read = {"tool": "read", "input": {"filePath": str(f)}}
        folder = p.root.parent / "holder"
        with FakeAnthropic([read, {"text": "Done."}]) as api, _holding_engine(folder) as taken:
            p.write_config(api.url)
            assert p.ctxview("install", "opencode").returncode == 0
            _pointed_at(p, folder / "engine.sock")
            p.run("go")
        got = tool_results(api.main_requests[-1])
        assert got["toolu_0001_read"].startswith(f"<path>{f}</path>")  # OpenCode's own
        assert [r.split(b"\n", 1)[0] for r in taken] == [b"opencode.tool"]
        assert b'"toolu_0001_read"' in taken[0]
        log = [json.loads(line) for line in Path(f"{p.store}.hook-failures.jsonl").read_text(
            ).splitlines()]  # fmt: skip
        mine = [e for e in log if e["event"].startswith("opencode.")]
        assert [(e["event"], e["tool_use_id"]) for e in mine] == [("opencode.tool",
                                                                   "toolu_0001_read")]  # fmt: skip
        assert "no answer within 2000 ms" in mine[0]["error"], mine
        assert "opencode.tool" in p.ctxview("doctor").stdout


# Two calls side by side, the plugin run by the Bun inside OpenCode's binary: its hooks called
# as OpenCode calls them, each call's output as the hook left it printed.
SIDE_BY_SIDE_JS = """
const { CtxviewPlugin } = await import(PLUGIN)
const hooks = await CtxviewPlugin({ directory: process.cwd() })
const call = async (id) => {
  const output = { output: `own ${id}`, metadata: {} }
  await hooks["tool.execute.after"](
    { tool: "bash", sessionID: "ses_side", callID: id, args: { command: "true" } }, output)
  return output.output
}
console.log(JSON.stringify(await Promise.all([call("call_1"), call("call_2")])))
process.exit(0)
"""


def _second_answers_first(folder: Path) -> AbstractContextManager[list[bytes]]:
    """An engine that holds the first request, and when the second has come answers the first
    and holds the second: the first call (awaiting past its hold of OpenCode's thread) gets its
    answer while the second holds the thread."""

    def answer_the_first(held: list[socket.socket]) -> None:
        if len(held) == 2:
            held[0].sendall(json.dumps({"output": "ctxview's answer to call_1"}).encode())
            held[0].close()

    return _fake_engine(folder, answer_the_first)


def test_an_answer_that_comes_while_another_call_holds_the_thread_reaches_its_call(
    tmp_path: Path,
) -> None:
    with project(tmp_path) as p:
        assert p.ctxview("install", "opencode").returncode == 0
        folder = p.root.parent / "holder"
        with _second_answers_first(folder) as taken:
            _pointed_at(p, folder / "engine.sock")
            script = p.root.parent / "side-by-side.mjs"
            plugin = p.root / ".opencode" / "plugin" / "ctxview.js"
            script.write_text(SIDE_BY_SIDE_JS.replace("PLUGIN", json.dumps(str(plugin))))
            done = subprocess.run([str(OPENCODE.resolve()), str(script)], cwd=p.root,
                                  env={**p.env(), "BUN_BE_BUN": "1"}, capture_output=True,
                                  text=True, timeout=60, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
        assert [b'"call_1"' in r for r in taken] == [True, False]
        assert json.loads(done.stdout.splitlines()[-1]) == ["ctxview's answer to call_1",
                                                            "own call_2"]  # fmt: skip
        log = [json.loads(line) for line in Path(f"{p.store}.hook-failures.jsonl").read_text(
            ).splitlines()]  # fmt: skip
        assert [(e["event"], e["tool_use_id"]) for e in log if e["event"] == "opencode.tool"] == [
            ("opencode.tool", "call_2")]  # fmt: skip
