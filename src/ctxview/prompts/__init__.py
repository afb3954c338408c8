"""What the model is told (spec §9): the block a harness adds to the system prompt and the MCP
server gives as its instructions, a function of what is really active where it is shown
(`claims.py`: the engine used directly, ctxview's MCP tools, Claude Code's hooks, recall alone)."""

from __future__ import annotations

from ctxview.prompts.claims import CLAUDE, ENGINE, MCP, RECALL, Active, Claim, claims
from ctxview.rules.config import Config

__all__ = ["CLAUDE", "ENGINE", "MCP", "RECALL", "Active", "Claim", "claims", "context_block"]


def context_block(config: Config | None = None, active: Active | None = None) -> str:
    """The block for `active` (default: a harness using the engine directly), with the
    session's own limits filled in (a session that caps at 100 lines must not be told 400)."""
    parts = claims(config, active)
    lead = [c.text for c in parts if c.section == "lead"]
    ids = [c.text for c in parts if c.section == "results" and c.key == "ids"]
    bullets = [f"- {c.text}" for c in parts if c.section == "results" and c.key != "ids"]
    tools = [c.text for c in parts if c.section == "tools"]
    recall = [c.text for c in parts if c.section == "recall"]
    out = [*lead, "## Tool results in this session", *ids]
    if bullets:
        out.append("\n".join(bullets))
    if tools:
        out += ["## Tools", *tools]
    out += ["## recall", *recall]
    return "\n\n".join(out) + "\n"
