"""`python -m ctxview.agents.gemini.show_server`: the stdio MCP server `ctxview` that Gemini CLI's
AfterTool hook tail-calls (`engine.py`): its one tool, `show`, answers with the text it is given,
which then stands in for the original tool's result."""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("ctxview")


@server.tool()
def show(text: str, ref: str = "") -> str:
    """ctxview's text of the tool result just returned (called by ctxview's hook, not by you)."""
    # `ref` is only there to be written into Gemini's chat file: the call ctxview stored.
    return text


if __name__ == "__main__":
    server.run()
