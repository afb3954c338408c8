"""Text helpers the formats share: ids to links, lines and elisions (a call in a few words is
in src/ctxview/report/call_summary.py, which the viewer uses too). Pure functions."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ctxview.export.tally import MARKER

ELISION_PREFIX = "["
# ID_IN_TEXT (rules/ids.py) starts with a lookbehind, which keeps re from jumping to each "#"
# with its fast literal search; this one starts at the "#", and the lookbehind is checked here.
_ID_AT_HASH = re.compile(r"#([0-9a-f]{4,})\b")

ELISION = re.compile(r"^\[(\d+) lines elided, full output (#[0-9a-f]+)\]$")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def esc(text: str) -> str:
    """HTML-escape text for element content (quotes are left: never used inside attributes).
    A NUL becomes U+FFFD, as a browser would show it: the writer's links use NULs."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def attr(text: str) -> str:
    return esc(text).replace('"', "&quot;").replace("'", "&#39;")


def link_ids(text: str, known: Callable[[int], bool], link: Callable[[int, str], str],
             plain: Callable[[str], str]) -> str:  # fmt: skip
    """`text` with every `#hex` that names a known result replaced by `link(rid, "#hex")`, the
    rest passed through `plain` (escaping)."""
    if "#" not in text:
        return plain(text)
    out: list[str] = []
    pos = 0
    for m in _ID_AT_HASH.finditer(text):
        start = m.start()
        if start and (text[start - 1].isalnum() or text[start - 1] in "_#"):
            continue  # inside a longer word, as ID_IN_TEXT's lookbehind says
        rid = int(m.group(1), 16)
        if not known(rid):
            continue
        out.append(plain(text[pos : m.start()]))
        out.append(link(rid, m.group(0)))
        pos = m.end()
    if not pos:
        return plain(text)
    out.append(plain(text[pos:]))
    return "".join(out)


def files_read_rows(extra: dict[str, Any]) -> list[tuple[str, str, str, int | None]]:
    """A boundary's files-read table as (path, lines, sha, result id) rows, for either format."""
    found = extra.get("rows")
    rows = found if isinstance(found, list) else []
    out = []
    for r in rows:
        if not isinstance(r, dict):
            continue
        total = r.get("total")
        span = f"{r.get('first')}-{r.get('last')} of {total}" if total else "empty"
        rid = r.get("rid")
        out.append((str(r.get("path", "")), span, str(r.get("sha", ""))[:8],
                    rid if isinstance(rid, int) else None))  # fmt: skip
    return out


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole when it fits, else cut after its last whole
    word that fits, with an ellipsis (a word longer than half the room is cut where the room
    ends). A redaction marker goes whole or not at all: a cut inside one would leave a marker
    no one can read or count."""
    if len(text) <= limit:
        return text
    room = limit - 1  # the ellipsis takes one
    end = room
    space = text.rfind(" ", 0, room + 1)
    if space >= room // 2:
        end = space
    for m in MARKER.finditer(text, max(0, end - 64), end + 64):
        if m.start() < end < m.end():
            end = m.start()
            break
    return text[:end].rstrip() + "…"


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


LANGS = {
    "py": "python", "js": "javascript", "mjs": "javascript", "ts": "typescript",
    "tsx": "tsx", "jsx": "jsx", "go": "go", "rs": "rust", "rb": "ruby", "java": "java",
    "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "hpp": "cpp", "cs": "csharp", "sh": "bash",
    "bash": "bash", "zsh": "bash", "json": "json", "toml": "toml", "yaml": "yaml", "yml": "yaml",
    "md": "markdown", "html": "html", "css": "css", "sql": "sql", "kt": "kotlin",
    "swift": "swift", "php": "php", "lua": "lua", "txt": "text", "xml": "xml",
}  # fmt: skip


def language(path: str | None) -> str:
    """A fenced block's language for a file's name ('' when unknown)."""
    if not path or "." not in path.rsplit("/", 1)[-1]:
        return ""
    return LANGS.get(path.rsplit(".", 1)[-1].lower(), "")
