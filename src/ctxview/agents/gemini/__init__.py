"""Gemini CLI: its hooks, the MCP tool that carries the rules\x27 text, install."""
