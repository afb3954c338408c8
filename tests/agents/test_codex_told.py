"""What Codex's model is told by `ctxview mcp --tools all` (the server's instructions, which Codex
0.169.0 gives as the description of the `mcp__ctxview` namespace), each claim checked against
what the real Codex then sends its model (`tests/prompt_checks.py`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from codex_helpers import PROVIDER, codex_env, exec_codex, needs_codex
from fake_openai import Call, Say, Scripted, tool_outputs
from prompt_checks import assert_told, normalized

from ctxview.agents.codex import install as codex_install
from ctxview.engine.session import TOOLS
from ctxview.prompts import MCP, Active, claims

pytestmark = needs_codex

BIG = "".join(f"{i}\n" for i in range(1, 2501))


def _codex(tmp: Path, script: list[Call | Say], files: dict[str, str],
           config: str = "") -> list[dict[str, Any]]:  # fmt: skip
    """The requests Codex sends while the scripted model runs `script` in a workspace holding
    `files`, ctxview installed."""
    ws, home = tmp / "ws", tmp / "home"
    ws.mkdir(parents=True)
    for name, text in files.items():
        (ws / name).write_text(text)
    (home / ".codex").mkdir(parents=True)
    with Scripted(script) as model:
        (home / ".codex" / "config.toml").write_text(config + PROVIDER.format(
            base_url=model.base_url))  # fmt: skip
        codex_install.install(home / ".codex", store=tmp / "store.db").write()
        done = exec_codex(ws, codex_env(home, home / ".codex"), "Work on the files.")
        requests = list(model.requests)
        assert model.spent, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    return requests


def _answer(text: str) -> str:
    """An MCP result as Codex gives it, without the `Wall time` and `Output:` lines it puts
    before it."""
    return text.split("Output:\n", 1)[1] if "Output:\n" in text else text


def test_every_claim_codex_is_told_is_what_its_model_gets(tmp_path: Path) -> None:
    def ct(name: str, **args: Any) -> Call:
        return Call(name, args, server="ctxview")

    wide = "head -c 50000 /dev/zero | tr '\\\\0' w"
    script = [
        ct("read", path="hello.txt"),  # 1000
        ct("read", path="hello.txt", offset=2, limit=1),  # 1001
        ct("read", path="big.txt"),  # 1002
        ct("read", path="big.txt", offset=2001),  # 1003
        ct("read", path="empty.txt"),  # 1004
        ct("grep", pattern="beta"),  # 1005
        ct("grep", pattern="beta"),  # 1006
        ct("bash", command="echo hi"),  # 1007
        ct("bash", command="echo hi"),  # 1008
        ct("bash", command="seq 1 3400"),  # 1009
        ct("bash", command=wide),  # 100a
        ct("edit", path="hello.txt", old_string="alpha", new_string="ALPHA"),
        ct("write", path="new.md", content="".join(f"{i}\n" for i in range(14))),
        ct("apply_patch", patch="*** Begin Patch\n*** Delete File: old.md\n*** End Patch"),
        ct("recall", id="#1009", offset=2001),
        ct("recall", id="#ffff"),
        Say("All done."),
    ]
    files = {"hello.txt": "alpha\nbeta\ngamma\n", "big.txt": BIG, "empty.txt": "",
             "old.md": "gone\n"}  # fmt: skip
    requests = _codex(tmp_path / "main", script, files)
    names = ["read", "reread", "big", "big-rest", "empty", "grep1", "grep2", "echo1", "echo2",
             "seq", "wide", "edit", "new", "delete", "recall", "none"]  # fmt: skip
    got = {n: _answer(tool_outputs(requests[i + 1])[f"call_{i + 1}"]) for i, n in enumerate(names)}

    offered = {t.get("name"): t for t in requests[0]["tools"]}
    space = offered["mcp__ctxview"]
    told = claims(active=Active(MCP, tools=TOOLS))
    said = normalized(space["description"])
    assert all(normalized(c.text) in said for c in told)  # the instructions are these claims

    compacted = _compaction(tmp_path / "compact")

    def lead() -> None:  # first: Codex names a deferred namespace by it
        assert space["description"].split("\n", 1)[0] == told[0].text

    def ids() -> None:
        given = [re.match(r"\[(#[0-9a-f]{4})[ \]]", t) for t in got.values()]
        assert all(given), got
        assert len({m[1] for m in given if m}) == len(given)

    def reads() -> None:
        assert got["read"].split("\n")[1:] == ["1: alpha", "2: beta", "3: gamma"]
        head, *lines = got["big"].split("\n")
        assert " lines 1-2000 of 2500 sha " in head and lines[-1] == "2000: 2000"
        assert " lines 2001-2500 of 2500 sha " in got["big-rest"].split("\n")[0]
        assert " empty sha " in got["empty"]

    def unchanged() -> None:
        assert got["reread"].endswith("Unchanged since #1000, which already shows lines 1-3.")

    def same_search() -> None:
        assert got["grep2"] == "[#1006] Same result as #1005."
        assert (got["echo1"], got["echo2"]) == ("[#1007]\nhi\n", "[#1008]\nhi\n")

    def cap() -> None:
        assert "\n[3100 lines elided, full output #1009]\n" in got["seq"]
        assert got["wide"].split("\n")[1].endswith(" […cut]")

    def edits() -> None:
        assert "-alpha\n+ALPHA" in got["edit"]
        assert got["new"].endswith("] Created, 14 lines.")
        assert re.fullmatch(r"\[#[0-9a-f]{4} old\.md deleted\]", got["delete"])

    def summary() -> None:
        stub, earlier = compacted
        assert stub.endswith("Unchanged since #1000, which already shows lines 1-3.")
        assert "[#1000 " not in earlier  # #1000 is not in front of the model any more

    def prefer() -> None:
        assert {t["name"] for t in space["tools"]} == set(TOOLS)
        assert all(f" {t}" in told[-2].text or f"({t}" in told[-2].text for t in TOOLS)
        assert "exec_command" not in offered  # Codex's shell is off; its own apply_patch is
        # offered only with a model whose catalog entry brings it (test_codex_tools.py)

    def recall() -> None:
        assert got["recall"].split("\n")[0].endswith(" recall #1009 lines 2001-3400 of 3400]")
        assert got["recall"].split("\n")[1] == "2001"
        assert got["none"].endswith("No stored result #ffff in this session.")

    checks = {"lead": lead, "ids": ids, "reads": reads, "unchanged": unchanged,
              "same-search": same_search, "cap": cap, "edits": edits, "summary": summary,
              "prefer": prefer, "recall": recall}  # fmt: skip
    assert_told(told, checks, [*got.values(), space["description"]])


def _compaction(tmp: Path) -> tuple[str, str]:
    """Codex compacting on its own (a token limit the first answer passes), between two reads
    of one file: (the second read's answer, the rest of what the model is sent with it)."""
    script = [
        Call("read", {"path": "hello.txt"}, server="ctxview"),
        Say("Summary: hello.txt was read."),  # Codex's compaction asks for a summary
        Call("read", {"path": "hello.txt"}, server="ctxview"),
        Say("Summary: hello.txt was read twice."),
        Say("Done."),
    ]
    requests = _codex(tmp, script, {"hello.txt": "alpha\nbeta\ngamma\n"},
                      config="model_auto_compact_token_limit = 50\n")  # fmt: skip
    at = next(i for i, r in enumerate(requests) if "call_3" in tool_outputs(r))
    stub = _answer(tool_outputs(requests[at])["call_3"])
    rest = [item for item in requests[at]["input"] if item.get("call_id") != "call_3"]
    return stub, repr(rest)
