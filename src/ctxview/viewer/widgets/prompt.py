"""A one-line prompt docked at the bottom: the jump prompt and the search bar."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label


class PromptBar(Horizontal):
    """Shown by `ask`; posts Submitted(kind, value) on enter, hides on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", show=False)]

    class Submitted(Message):
        def __init__(self, kind: str, value: str) -> None:
            super().__init__()
            self.kind = kind
            self.value = value

    def __init__(self) -> None:
        super().__init__(classes="prompt-bar")
        self.kind = ""

    def compose(self) -> ComposeResult:
        yield Label("", id="prompt-label")
        field = Input(id="prompt-input")
        # Focusable only while asked: Textual focuses a new screen's first focusable widget as
        # the screen comes up, before the CSS that hides this bar applies, and the keys pressed
        # until the screen's view took the focus were typed into the hidden input.
        field.can_focus = False
        yield field

    def ask(self, kind: str, label: str, placeholder: str = "") -> None:
        self.kind = kind
        self.query_one(Label).update(label)
        field = self.query_one(Input)
        field.value = ""
        field.placeholder = placeholder
        self.add_class("-shown")
        field.can_focus = True
        field.focus()

    def _hide(self) -> None:
        self.remove_class("-shown")
        self.query_one(Input).can_focus = False

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def action_close(self) -> None:
        self._hide()
        self.screen.focus_next()
        self.post_message(self.Submitted("", ""))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        kind = self.kind
        self._hide()
        self.post_message(self.Submitted(kind, event.value))
