"""Running the pinned Codex (tests/agents/codex, `npm ci` there) headless (`codex exec`) against
the scripted Responses API (fake_openai.py): by itself, with ctxview's MCP server installed in
its CODEX_HOME, or through `ctxview run` (the proxy) with its base URL ours."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

if __package__:  # imported as tests.agents.codex_helpers (the project's root on sys.path)
    from .agent_project import CTXVIEW, HERE, needs
else:  # as codex_helpers (tests/agents on sys.path: pytest's own import, the benches)
    from agent_project import CTXVIEW, HERE, needs

CODEX = HERE / "codex" / "node_modules" / ".bin" / "codex"
EXEC = ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]

needs_codex = needs(CODEX, "@openai/codex", "codex")

# Loopback only: no update check, analytics, telemetry export or plugin sync (each of which
# Codex 0.169.0 otherwise tries on its own).
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

# The same with the scripted server as a provider of its own (`.format(base_url=…)` gives it).
PROVIDER = (
    "# the person's own settings, kept by the install\n"
    + CONFIG.replace('model = "gpt-test"\n', 'model = "gpt-test"\nmodel_provider = "fake"\n')
    + '\n[model_providers.fake]\nname = "scripted"\nbase_url = "{base_url}"\n'
    'wire_api = "responses"\nenv_key = "FAKE_OPENAI_KEY"\n'
)


def codex_env(home: Path, codex_home: Path) -> dict[str, str]:
    """Nothing of the test's environment but PATH: Codex on its provider `fake` (PROVIDER)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "FAKE_OPENAI_KEY": "not-a-key",
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "RUST_LOG": os.environ.get("RUST_LOG", "warn"),
    }


def proxied_env(home: Path, codex_home: Path, store: Path, **extra: str) -> dict[str, str]:
    """The test's environment without Codex's, OpenAI's and ctxview's variables: Codex on its
    built-in OpenAI provider (CONFIG), its key one the proxy must not store."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI", "CODEX", "CTXVIEW"))}  # fmt: skip
    env.update(HOME=str(home), CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-test-secret",
               CTXVIEW_STORE=str(store), **extra)  # fmt: skip
    return env


def exec_codex(ws: Path, env: dict[str, str], prompt: str,
               timeout: float = 150) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """One `codex exec` in `ws`, whatever its exit code."""
    return subprocess.run([str(CODEX), *EXEC, prompt], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)  # fmt: skip


def exec_through_ctxview(port: int, ws: Path, env: dict[str, str], prompt: str, *,
                         elide: bool = False, timeout: float = 180
                         ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """One `ctxview run [--elide] --upstream <the scripted server> -- codex exec …` in `ws`,
    which must succeed."""
    done = subprocess.run(
        [str(CTXVIEW), "run", *(["--elide"] if elide else []), "--upstream",
         f"http://127.0.0.1:{port}", "--", str(CODEX), *EXEC, prompt],
        cwd=ws, env=env, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return done
