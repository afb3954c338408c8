"""The agents a session can come from, by the names a person uses for them: the `source` the store
keeps (`claude-code`, `gemini-cli`, ...) and what `ctxview sessions --agent` and the viewer's
`agent:` filter take for each."""

from __future__ import annotations

# The names a user may give `--agent` and the viewer's `agent:` filter for each source.
AGENT_NAMES = {
    "claude-code": ("claude", "claude-code", "cc"), "codex": ("codex", "cx"),
    "gemini-cli": ("gemini", "gemini-cli", "gm"), "opencode": ("opencode", "oc"), "pi": ("pi",),
    "copilot-cli": ("copilot", "copilot-cli", "cp"), "cursor": ("cursor", "cursor-cli", "cu"),
    "aider": ("aider", "ai"),
}  # fmt: skip


def agent_source(name: str) -> str | None:
    """The source a name given by the user stands for (`gemini` -> `gemini-cli`), or None."""
    name = name.strip().lower()
    for source, names in AGENT_NAMES.items():
        if name == source or name in names:
            return source
    return None
