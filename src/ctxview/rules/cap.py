"""§3 Large output is capped on the way in: head, one elision line, tail."""

from __future__ import annotations

from dataclasses import dataclass

from ctxview.rules.config import Config
from ctxview.rules.lines import count_lines


@dataclass(frozen=True)
class Capped:
    text: str  # what the model is given (without the bracket)
    total_lines: int
    head_lines: int
    tail_lines: int

    @property
    def elided(self) -> int:
        return self.total_lines - self.head_lines - self.tail_lines


# What a capped text adds to its head and tail: the id's bracket, the elision line, newlines.
_FRAME_CHARS = 120


def fit(config: Config, shows_at_most: int) -> Config:
    """The cap's bounds for a host that shows a result of at most `shows_at_most` characters
    and cuts a longer one itself (Claude Code sends a 20,000-character Grep as a 2 KB preview):
    the whole capped text, elision line included, must reach the model. Head and tail keep
    their 2:1 share; bounds already within the host's are kept as they are."""
    room = max(shows_at_most - _FRAME_CHARS, 3)
    if config["cap.max_chars"] <= room and (
        config["cap.head_chars"] + config["cap.tail_chars"] <= room
    ):
        return config
    head = min(config["cap.head_chars"], room * 2 // 3)
    return Config({**config.overrides, "cap.max_chars": min(config["cap.max_chars"], room),
                   "cap.head_chars": head,
                   "cap.tail_chars": min(config["cap.tail_chars"], room - head)})  # fmt: skip


def needs_cap(text: str, config: Config) -> bool:
    max_chars: int = config["cap.max_chars"]
    max_lines: int = config["cap.max_lines"]
    return len(text) > max_chars or count_lines(text) > max_lines


def cap(text: str, ref: str, config: Config) -> Capped | None:
    """The capped form of `text`, or None when it is within bounds.

    Works by scanning for newlines from each end, so a 200 MB output is never split into lines.
    Newlines between kept lines count toward head_chars and tail_chars (DESIGN decision 4).
    """
    if not needs_cap(text, config):
        return None
    total = count_lines(text)
    body_end = len(text) - 1 if text.endswith("\n") else len(text)

    head: list[str] = []
    pos, used = 0, 0
    max_lines, max_chars = config["cap.head_lines"], config["cap.head_chars"]
    while len(head) < max_lines and pos < body_end:
        nl = text.find("\n", pos, body_end)
        end = body_end if nl == -1 else nl
        line = _strip_cr(text[pos:end])
        cost = len(line) + (1 if head else 0)
        if used + cost > max_chars:
            if not head:  # a first line longer than head_chars is cut, and ends […cut]
                head.append(line[:max_chars] + config["text.cut"])
                pos = end + 1
            break
        head.append(line)
        used += cost
        pos = end + 1
    head_end = pos  # the first character not in the head

    tail: list[str] = []
    end, used = body_end, 0
    max_lines, max_chars = config["cap.tail_lines"], config["cap.tail_chars"]
    while len(tail) < max_lines and end > head_end:
        nl = text.rfind("\n", head_end, end)
        start = head_end if nl == -1 else nl + 1
        line = _strip_cr(text[start:end])
        cost = len(line) + (1 if tail else 0)
        if used + cost > max_chars:
            break
        tail.append(line)
        used += cost
        end = start - 1
    tail.reverse()

    elided = total - len(head) - len(tail)
    middle = config.text("text.elided", n=elided, ref=ref)
    return Capped("\n".join([*head, middle, *tail]), total, len(head), len(tail))


def _strip_cr(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line
