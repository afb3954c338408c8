"""`python -m ctxview.agents.gemini.show_server`: the stdio MCP server `ctxview` that Gemini CLI's
AfterTool hook tail-calls (`engine.py`): `show` answers with the text it is given, which then
stands in for the original tool's result. `recall` is the model's: this process knows no
session (Gemini's MCP calls name none), so the AfterTool hook answers it from the session's
store and its own answer reaches the model only when the hook did not answer."""

from __future__ import annotations

from mcp.server import MCPServer

from ctxview.prompts import Active, context_block
from ctxview.prompts.claims import GEMINI

# Gemini CLI puts an MCP server's instructions in the session's context (the first message's
# <project_context>, in a trusted folder): what the model is told (spec §9) of ids and recall.
server = MCPServer("ctxview", instructions=context_block(active=Active(host=GEMINI)))


@server.tool()
def show(text: str, ref: str = "") -> str:
    """ctxview's text of the tool result just returned (called by ctxview's hook, not by you)."""
    # `ref` is only there to be written into Gemini's chat file: the call ctxview stored.
    return text


@server.tool()
def recall(id: str, offset: int | None = None, limit: int | None = None) -> str:
    """Show a stored result of this session again, in full: elided output, the lines a stub
    stands for, a diff, results from before a summary. id is the result's id with or without
    #; offset is the first line (from 1), limit the number of lines."""
    return (f"ctxview's hook did not answer, so {id} could not be recalled "
            "(`ctxview doctor` says why).")  # fmt: skip


if __name__ == "__main__":
    server.run()
