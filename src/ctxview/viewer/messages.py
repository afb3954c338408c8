"""Messages the viewer's parts send each other (the watcher, the screens, the palette)."""

from __future__ import annotations

from textual.message import Message


class StoreChanged(Message, bubble=False):
    """Something was committed to the store (posted by the StoreWatcher; the app forwards it to
    its screens). It does not bubble, so a screen's copy never loops back to the app."""


class OpenSession(Message):
    """Open a session's transcript."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id


class OpenResult(Message):
    """Open the full stored result `rid` of a session."""

    def __init__(self, session_id: str, rid: int) -> None:
        super().__init__()
        self.session_id = session_id
        self.rid = rid


class Jump(Message):
    """Land on result `rid` in a session's transcript (opens the transcript when needed)."""

    def __init__(self, session_id: str, rid: int) -> None:
        super().__init__()
        self.session_id = session_id
        self.rid = rid
