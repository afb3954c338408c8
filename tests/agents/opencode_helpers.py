"""Running the pinned OpenCode (tests/agents/opencode, `npm ci` there) headless (`opencode run`)
against the scripted Messages API (fake_anthropic.py) as an Anthropic provider with its base
URL, each run with its own HOME, XDG folders and store."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar

if __package__:  # imported as tests.agents.opencode_helpers (the project's root on sys.path)
    from .agent_project import CTXVIEW as CTXVIEW
    from .agent_project import HERE, AgentProject, headless, needs
    from .messages_request import texts as texts
    from .messages_request import tool_results as tool_results
else:  # as opencode_helpers (tests/agents on sys.path: pytest's own import, the benches)
    from agent_project import CTXVIEW as CTXVIEW
    from agent_project import HERE, AgentProject, headless, needs
    from messages_request import texts as texts
    from messages_request import tool_results as tool_results

OPENCODE = HERE / "opencode" / "node_modules" / ".bin" / "opencode"

needs_opencode = needs(OPENCODE, "OpenCode", "opencode")


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


class Project(AgentProject):
    scrub: ClassVar[tuple[str, ...]] = ("OPENCODE", "ANTHROPIC")
    own_xdg: ClassVar[bool] = True

    @property
    def database(self) -> Path:
        return self.home / ".local" / "share" / "opencode" / "opencode.db"

    def env(self, **extra: str) -> dict[str, str]:
        return self.agent_env(
            PWD=str(self.root),  # OpenCode takes its folder from PWD
            OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_SHARE="1", **extra,
        )  # fmt: skip

    def ctxview_env(self) -> dict[str, str]:
        return self.env()

    def write_config(self, api_url: str, **kw: Any) -> None:
        (self.root / "opencode.json").write_text(json.dumps(config(api_url, **kw)))

    def run(self, prompt: str, *args: str, **extra: str) -> list[dict[str, Any]]:
        """One headless run; its JSON events."""
        done = headless([str(OPENCODE), "run", "--format", "json", *args, prompt], self.root,
                        self.env(**extra), timeout=180, tail=3000)  # fmt: skip
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def project(tmp_path: Path) -> AbstractContextManager[Project]:
    return Project.made(tmp_path)
