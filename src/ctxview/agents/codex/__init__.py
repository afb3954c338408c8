"""Codex: installing ctxview's MCP server into its config."""
