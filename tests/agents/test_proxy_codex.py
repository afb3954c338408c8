"""The real Codex through `ctxview run -- codex exec …` on the scripted Responses API: every
request it sent is stored exactly, in the session Codex names (`cx-<id>`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import Call, Say, Scripted

HERE = Path(__file__).resolve().parent
CODEX = HERE / "codex" / "node_modules" / ".bin" / "codex"
CTXVIEW = Path(sys.executable).with_name("ctxview")

pytestmark = pytest.mark.skipif(not CODEX.exists(), reason="Codex is not installed (npm ci in "
                                "tests/agents/codex)")  # fmt: skip

CONFIG = """\
model = "gpt-test"
check_for_update_on_startup = false

[analytics]
enabled = false

[otel]
exporter = "none"
metrics_exporter = "none"

[features]
plugins = false
"""


def test_every_request_codex_sent_is_stored_exactly(tmp_path: Path) -> None:
    home, codex_home, work = tmp_path / "home", tmp_path / "codex", tmp_path / "work"
    for d in (home, codex_home, work):
        d.mkdir()
    (codex_home / "config.toml").write_text(CONFIG)
    store = tmp_path / "state" / "store.db"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI", "CODEX", "CTXVIEW"))}  # fmt: skip
    env.update(HOME=str(home), CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-test-secret",
               CTXVIEW_STORE=str(store))  # fmt: skip
    with Scripted([Call("exec_command", {"cmd": "echo hi"}), Say("ok")]) as api:
        done = subprocess.run(
            [str(CTXVIEW), "run", "--upstream", f"http://127.0.0.1:{api.port}", "--", str(CODEX),
             "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
             "say hi"], cwd=work, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        sent = list(api.requests)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert len(sent) >= 2
    out = subprocess.run([str(CTXVIEW), "requests", "--json"], env=env, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    got: list[dict[str, Any]] = [json.loads(line) for line in out.stdout.splitlines()]
    responses = [r for r in got if r["protocol"] == "openai-responses"]
    key = lambda b: json.dumps(b, sort_keys=True)  # noqa: E731
    assert sorted(map(key, (r["body"] for r in responses))) == sorted(map(key, sent))
    [session] = {r["session"] for r in responses}
    assert session == f"cx-{sent[0]['prompt_cache_key']}"
    for r in responses:
        assert r["outcome"] == "complete"
        assert r["usage"]["input_tokens"] == 100
        assert r["response"]["output"]
    assert b"sk-test-secret" not in store.read_bytes()
