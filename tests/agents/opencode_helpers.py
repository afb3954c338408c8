"""Running the pinned OpenCode (tests/agents/opencode, `npm ci` there) headless (`opencode run`)
against the scripted Messages API (fake_anthropic.py) as an Anthropic provider with its base
URL, each run with its own HOME, XDG folders and store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctxview.agents.hook_client import stop

HERE = Path(__file__).resolve().parent
OPENCODE = HERE / "opencode" / "node_modules" / ".bin" / "opencode"
CTXVIEW = Path(sys.executable).with_name("ctxview")

needs_opencode = pytest.mark.skipif(
    not OPENCODE.exists(), reason="OpenCode is not installed (npm ci in tests/agents/opencode)"
)


def config(api_url: str, context: int = 200_000) -> dict[str, Any]:
    """opencode.json: the scripted server as provider `fake` (OpenCode's bundled Anthropic SDK,
    its base URL ours), its one model `m` with `context` tokens, every tool allowed, and
    compaction keeping no tail (the whole history is summarised)."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "model": "fake/m", "small_model": "fake/m", "autoupdate": False, "share": "disabled",
        "permission": {"*": "allow"},
        "compaction": {"auto": True, "prune": False, "tail_turns": 0},
        "provider": {"fake": {
            "npm": "@ai-sdk/anthropic", "name": "Fake",
            "options": {"baseURL": f"{api_url}/v1", "apiKey": "test-key"},
            "models": {"m": {"name": "m", "tool_call": True,
                             "limit": {"context": context, "output": 4000}}},
        }},
    }  # fmt: skip


@dataclass
class Project:
    root: Path
    home: Path
    store: Path

    @property
    def database(self) -> Path:
        return self.home / ".local" / "share" / "opencode" / "opencode.db"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENCODE", "ANTHROPIC", "CTXVIEW", "XDG_"))}  # fmt: skip
        h = self.home
        env.update(
            HOME=str(h), PWD=str(self.root),  # OpenCode takes its folder from PWD
            XDG_DATA_HOME=str(h / ".local" / "share"), XDG_CONFIG_HOME=str(h / ".config"),
            XDG_CACHE_HOME=str(h / ".cache"), XDG_STATE_HOME=str(h / ".local" / "state"),
            OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_SHARE="1",
            CTXVIEW_STORE=str(self.store), **extra,
        )  # fmt: skip
        return env

    def ctxview(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CTXVIEW), *args], cwd=self.root, env=self.env(),
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    def write_config(self, api_url: str, **kw: Any) -> None:
        (self.root / "opencode.json").write_text(json.dumps(config(api_url, **kw)))

    def run(self, prompt: str, *args: str, **extra: str) -> list[dict[str, Any]]:
        """One headless run; its JSON events."""
        done = subprocess.run(
            [str(OPENCODE), "run", "--format", "json", *args, prompt], cwd=self.root,
            env=self.env(**extra), capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@contextmanager
def project(tmp_path: Path) -> Iterator[Project]:
    p = Project(tmp_path / "proj", tmp_path / "home", tmp_path / "state" / "store.db")
    p.root.mkdir()
    p.home.mkdir()
    try:
        yield p
    finally:
        stop(p.store)


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_use_id -> the exact text the model got for it, from a Messages API request."""
    out: dict[str, str] = {}
    for m in body.get("messages", []):
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for b in content:
            if b.get("type") == "tool_result":
                c = b.get("content")
                out[b["tool_use_id"]] = c if isinstance(c, str) else "\n".join(
                    x.get("text", "") for x in c or [] if isinstance(x, dict))  # fmt: skip
    return out


def texts(body: dict[str, Any]) -> list[str]:
    """Every text block of a request's messages, in order."""
    out: list[str] = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        for b in content or []:
            if b.get("type") == "text":
                out.append(b["text"])
    return out
