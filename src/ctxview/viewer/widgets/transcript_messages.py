"""What the transcript view posts: the screen hears of rows arriving, of the cursor following a
stub, a sub-agent or a stride, and of the outline loaded. In the namespace of the view, which
names them (`TranscriptView.Follow`), so their handlers are `on_transcript_view_follow` etc."""

from __future__ import annotations

from textual.message import Message


class Follow(Message, namespace="transcript_view"):
    """Posted when rows arrive or the follow state changes (for the "new rows" note)."""

    def __init__(self, following: bool, new_rows: int) -> None:
        super().__init__()
        self.following = following
        self.new_rows = new_rows


class StubFollowed(Message, namespace="transcript_view"):
    """Enter on a stub: the screen jumps to the full result (keeping the jump history)."""

    def __init__(self, rid: int) -> None:
        super().__init__()
        self.rid = rid


class ModeChanged(Message, namespace="transcript_view"):
    """How the view draws changed (raw text or Markdown): the status line says which."""


class Loaded(Message, namespace="transcript_view"):
    """The whole outline is loaded (older rows come in after the first screen)."""


class Landed(Message, namespace="transcript_view"):
    """The first window of rows is on screen (the tail, or the rows around a far jump)."""


class AgentFollowed(Message, namespace="transcript_view"):
    """Enter on a call that started a sub-agent: the app opens the sub-agent's session."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id


class SeqFollowed(Message, namespace="transcript_view"):
    """A click on a mark that names an event (an elision stride): the screen goes there."""

    def __init__(self, seq: int) -> None:
        super().__init__()
        self.seq = seq
