"""The tools Codex itself (@openai/codex 0.169.0) offers its model, read from the first request the
scripted Responses API receives, with and without `ctxview install codex` (`shell_tool = false`).

Codex offers its own `apply_patch` when the model's entry in its model catalog has an
`apply_patch_tool_type` (every model of 0.169.0's bundled catalog: gpt-5.5, gpt-5.6-*, gpt-6*),
whether its shell is on or off; for a model it has no entry for (a provider's own model, the
scripted `gpt-test` here) `apply_patch` runs through the shell only, so with the shell off it is
not offered at all. No feature flag turns it off (`apply_patch_freeform` is marked removed);
a `model_catalog_json` whose entry has no `apply_patch_tool_type` does. README's Codex section
says the same."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from codex_helpers import CODEX, PROVIDER, codex_env, exec_codex, needs_codex
from fake_openai import Say, Scripted

from ctxview.agents.codex import install as codex_install

pytestmark = needs_codex

CTXVIEW_TOOLS = {"read", "write", "edit", "multiedit", "apply_patch", "list", "glob", "grep",
                 "bash", "recall"}  # fmt: skip


def _offered(tmp: Path, model: str, *, install: bool, extra: str = "",
             features: str = "") -> dict[str, Any]:  # fmt: skip
    """name -> tool of the first request Codex sends; `extra`: top-level config lines,
    `features`: lines of its `[features]` table."""
    ws, home = tmp / "ws", tmp / "home"
    codex_home = home / ".codex"
    ws.mkdir(parents=True)
    codex_home.mkdir(parents=True)
    with Scripted([Say("ok")]) as api:
        config = PROVIDER.format(base_url=api.base_url).replace('"gpt-test"', json.dumps(model))
        config = config.replace("plugins = false\n", f"plugins = false\n{features}")
        (codex_home / "config.toml").write_text(extra + config)
        if install:
            codex_install.install(codex_home, store=tmp / "store.db").write()
        done = exec_codex(ws, codex_env(home, codex_home), "hello")
        requests = list(api.requests)
    assert done.returncode == 0 and requests, done.stderr[-3000:]
    offered = {t.get("name") or t.get("type"): t for t in requests[0].get("tools", [])}
    offered["_input"] = requests[0].get("input", [])
    return offered


def test_a_model_codex_has_no_catalog_entry_for_gets_no_apply_patch_once_the_shell_is_off(
    tmp_path: Path,
) -> None:
    plain = _offered(tmp_path / "plain", "gpt-test", install=False)
    assert "exec_command" in plain and "apply_patch" not in plain  # apply_patch: by the shell
    hooked = _offered(tmp_path / "installed", "gpt-test", install=True)
    assert "exec_command" not in hooked and "apply_patch" not in hooked
    assert {t["name"] for t in hooked["mcp__ctxview"]["tools"]} == CTXVIEW_TOOLS


def test_a_catalogued_model_gets_codexs_own_apply_patch_whatever_the_shell(
    tmp_path: Path,
) -> None:
    offered = _offered(tmp_path / "installed", "gpt-5.5", install=True)
    assert "exec_command" not in offered
    assert offered["apply_patch"]["type"] == "custom"  # Codex's own, freeform
    # gpt-5.5 searches its tools: ctxview's are deferred behind `tool_search`, named with the
    # first line of the server's instructions.
    assert "tool_search" in offered and "mcp__ctxview" not in offered
    listing = "\n".join(part.get("text", "") for item in offered["_input"]
                        for part in item.get("content", []) if isinstance(part, dict))  # fmt: skip
    assert "Deferred tool namespaces:\n- mcp__ctxview: ctxview's tools (read, write, " in listing
    # The flag that once chose apply_patch's form changes nothing now.
    flagged = _offered(tmp_path / "flag", "gpt-5.5", install=True,
                       features="apply_patch_freeform = false\n")  # fmt: skip
    assert "apply_patch" in flagged


def test_a_catalog_entry_without_apply_patch_takes_codexs_away(tmp_path: Path) -> None:
    home = tmp_path / "probe"
    (home / ".codex").mkdir(parents=True)
    done = subprocess.run([str(CODEX), "debug", "models", "--bundled"], capture_output=True,
                          text=True, timeout=60, env=codex_env(home, home / ".codex"),
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    entry = next(m for m in json.loads(done.stdout)["models"] if m["slug"] == "gpt-5.5")
    assert entry["apply_patch_tool_type"] == "freeform"
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"models": [{**entry, "apply_patch_tool_type": None}]}))
    offered = _offered(tmp_path / "own", "gpt-5.5", install=True,
                       extra=f"model_catalog_json = {json.dumps(str(catalog))}\n")  # fmt: skip
    assert "apply_patch" not in offered and "exec_command" not in offered
