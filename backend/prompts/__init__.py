"""What the model is told (spec §9): the blocks a harness adds to the system prompt."""

from __future__ import annotations

from importlib import resources

from ..config import Config


def context_block(config: Config | None = None) -> str:
    """The context-hygiene block (`context.md`), for every session that has `recall`, with the
    session's own limits filled in (a session that caps at 100 lines must not be told 400)."""
    config = config or Config()
    text = resources.files(__package__).joinpath("context.md").read_text(encoding="utf-8")
    return text.format(
        max_lines=config["cap.max_lines"],
        max_chars=config["cap.max_chars"],
        window=config["window.lines"],
    )
