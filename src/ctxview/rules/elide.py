"""Long-session elision (opt-in, `elide.*`): old tool results leave the context as one-line stubs.

Once the context of a session serialises to more than `elide.threshold_chars`, every tool result
older than the live window whose text is longer than `elide.min_chars` is sent as a stub naming
its id, so `recall` brings it back. The window is a staircase that moves only in whole strides,
so the cached prefix breaks once per stride, not every turn; the stub is a pure function of the
result, so a result elided once is sent with the same bytes on every later request.

Pure functions only: the running state lives in `src/ctxview/context/state.py`.
"""

from __future__ import annotations

import hashlib

from ctxview.rules.config import Config
from ctxview.rules.ids import format_id


def boundary(n: int, keep: int, stride: int) -> int:
    """How many leading messages are older than the live window: ⌊(n − keep)/stride⌋ × stride,
    never below 0. It grows only in whole strides, and at least `keep` messages stay whole."""
    if stride < 1:
        raise ValueError("elide.stride must be at least 1")
    if n <= keep:
        return 0
    return (n - keep) // stride * stride


def crossed(size_chars: int, threshold_chars: int) -> bool:
    """Whether a context of `size_chars` (serialised, before elision) is past the threshold."""
    return size_chars > threshold_chars


def elidable(text_chars: int, min_chars: int, stub_chars: int = 0) -> bool:
    """A result is worth a stub only when its text is longer than `elide.min_chars` (a stub is
    about 80 characters, and short results are the ones the model still quotes) and longer than
    the stub itself, whatever the config says: elision never makes a context longer."""
    return text_chars > min_chars and text_chars > stub_chars


def what(tool: str | None, path: str | None) -> str:
    """What the stub says the result was: `read src/app.ts`, `bash`."""
    tool = tool or "tool"
    return f"{tool} {path}" if path else tool


def stub(rid: int, chars: int, tool: str | None, path: str | None, config: Config) -> str:
    """The one line an elided result is sent as. A function of the result alone (its id, the
    length of its text, its tool and path), so it is the same bytes on every later request:
    `[#1a2b elided: 12,345 chars of read src/app.ts; recall #1a2b to see it]`."""
    return config.text(
        "text.elided_result",
        ref=format_id(rid, config["ids.digits"]),
        chars=f"{chars:,}",
        what=what(tool, path),
    )


# A proxied request's elided block (`context/request_elide.py`) is stored under an id that is a
# function of its text alone, so its stub is decided before the request is forwarded, with no
# store to ask, and is the same bytes on every later request: `CONTENT_BASE` plus 40 bits of the
# text's SHA-256. Ids the store hands out count up from `ids.first` and never reach it.
CONTENT_BASE = 1 << 40
CONTENT_BITS = 40


def content_id(text: str) -> int:
    """The id a block elided by the proxy is stored under: a pure function of its text."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return CONTENT_BASE + (int.from_bytes(digest[:5], "big") & ((1 << CONTENT_BITS) - 1))


def is_content_id(rid: int) -> bool:
    return CONTENT_BASE <= rid < 2 * CONTENT_BASE


def request_stub(text: str, tool: str | None, recall: str | None, config: Config) -> str:
    """The one line a proxied request's tool result is sent as once elided: its id, its size,
    its tool, and how to get it back (`recall`: ctxview's MCP recall tool as the client names
    it, `mcp__ctxview__recall` for Claude Code; None: `ctxview recall ID` through its shell). A
    function of the text, the tool that produced it and the session's `recall`, all fixed once
    the result is in the history."""
    ref = format_id(content_id(text), config["ids.digits"])
    if recall is None:
        # The id bare in the command: a shell takes `#` as the start of a comment.
        how = config.text("text.elided_how_shell", ref=ref, bare=ref.lstrip("#"))
    else:
        how = config.text("text.elided_how_mcp", ref=ref, tool=recall)
    return config.text("text.elided_request_result", ref=ref, chars=f"{len(text):,}",
                       what=tool or "tool", how=how)  # fmt: skip
