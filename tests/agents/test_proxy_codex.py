"""The real Codex through `ctxview run -- codex exec …` on the scripted Responses API: every
request it sent is stored exactly, in the session Codex names (`cx-<id>`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from codex_helpers import CODEX as CODEX
from codex_helpers import CONFIG, exec_through_ctxview, needs_codex, proxied_env
from codex_helpers import CTXVIEW as CTXVIEW
from fake_openai import Call, Say, Scripted

pytestmark = needs_codex


def test_every_request_codex_sent_is_stored_exactly(tmp_path: Path) -> None:
    home, codex_home, work = tmp_path / "home", tmp_path / "codex", tmp_path / "work"
    for d in (home, codex_home, work):
        d.mkdir()
    (codex_home / "config.toml").write_text(CONFIG)
    store = tmp_path / "state" / "store.db"
    env = proxied_env(home, codex_home, store)
    with Scripted([Call("exec_command", {"cmd": "echo hi"}), Say("ok")]) as api:
        exec_through_ctxview(api.port, work, env, "say hi")
        sent = list(api.requests)
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
