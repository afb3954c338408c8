"""The agent's tools. Each returns its raw output; the engine applies the rules to it."""

from ctxview.tools.errors import ToolError

__all__ = ["ToolError"]
