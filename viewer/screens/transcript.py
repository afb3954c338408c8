"""The transcript of one session (placeholder until the Line-API view lands)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static


class TranscriptScreen(Screen[None]):
    def __init__(self, session_id: str | None, jump: str | int | None = None) -> None:
        super().__init__()
        self.session_id = session_id or ""
        self.jump = jump

    def compose(self) -> ComposeResult:
        yield Static(f"transcript {self.session_id}")
        yield Footer()

    def jump_to(self, rid: int) -> None:
        pass
