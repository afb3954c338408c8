"""Claude Code: the hook engine, the diffs from its edit reports, install, and who made an MCP call."""
