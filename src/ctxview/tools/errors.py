"""A tool's failure: a config sentence key and its fields, made into an error result by the engine."""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    def __init__(self, key: str, **fields: Any) -> None:
        super().__init__(key)
        self.key = key
        self.fields = fields
