"""What the model is told (spec §9): the blocks a harness adds to the system prompt."""

from __future__ import annotations

from importlib import resources


def context_block() -> str:
    """The context-hygiene block (`context.md`), for every session that has `recall`."""
    return resources.files(__package__).joinpath("context.md").read_text(encoding="utf-8")
