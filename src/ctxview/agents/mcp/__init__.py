"""ctxview's MCP server (recall, search, the tools with the rules) over stdio."""
