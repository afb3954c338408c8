"""Server-sent events parsed as the bytes arrive, in chunks cut anywhere (a line, a UTF-8
character or a `\\r\\n` split across two chunks). Only the unfinished line is held."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Event:
    event: str = "message"
    data: str = ""


@dataclass
class SseParser:
    _tail: bytes = b""
    _event: str = ""
    _data: list[str] = field(default_factory=list)
    _cr: bool = False  # the last chunk ended in `\r`: a `\n` first in the next one is its pair

    def feed(self, chunk: bytes) -> list[Event]:
        if not chunk:  # nothing: a `\r` before it still waits for its `\n`
            return []
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = chunk.endswith(b"\r")
        buf = self._tail + chunk
        lines = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._tail = lines.pop()
        out: list[Event] = []
        for raw in lines:
            ev = self._line(raw.decode("utf-8", "replace"))
            if ev is not None:
                out.append(ev)
        return out

    def close(self) -> list[Event]:
        """The events a stream that ended without a final blank line leaves."""
        out = self.feed(b"\n") if self._tail else []
        ev = self._line("")
        return [*out, ev] if ev is not None else out

    def _line(self, line: str) -> Event | None:
        if not line:
            if not self._data and not self._event:
                return None
            ev = Event(self._event or "message", "\n".join(self._data))
            self._event, self._data = "", []
            return ev
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None
