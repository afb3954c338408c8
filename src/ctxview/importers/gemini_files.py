"""Another chat file of a Gemini session ctxview holds from one file: a part of the same session,
or a copy to refuse.

Gemini CLI 0.61 can leave two chat files with one session id in a project's `chats/` folder:

- A resume (`--resume`) in a later minute than the one the chat file is named by: the client's
  chat is started once before the resume is known (`config.initialize()`), and its recording
  service names a new file by the minute, `session-<minute>-<id8>.jsonl`, writing there a header
  and a `$set` of the session-context message; the resume (`geminiClient.resumeChat`) then goes
  on appending to the resumed file itself (`ChatRecordingService.initialize`:
  `this.conversationFile = resumedSessionData.filePath`), and the new file is never written
  again (bundle/chunk-JDPZ4CE3.js `ChatRecordingService`, gemini-3HFX2LNT.js `main` and
  `runNonInteractive2`). In the same minute that name is the resumed file's own, and the header
  and `$set` are appended to it. `--resume latest` passes the new file over: it holds no
  resumable content (chunk-2YTYPKEZ.js `getAllSessionFiles`).
- A resume of a `.json` chat document: the session is written whole into `<name>.jsonl` (the
  header, every message) and goes on there; the `.json` stays as it was.

So a file of the session, in the folder of the file the session was imported from (or written
live from), is a part of it when everything it holds is stored already (the new file holds no
message at all), and its continuation when it holds the newest message stored and messages
after it: the session's source becomes that file, read from its start, the messages already
stored passed over. Anything else (another folder, messages that do not go on from what is
stored) is another file.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any

from ctxview.files.regular import read_regular
from ctxview.importers.common import id_text, parse_line
from ctxview.importers.document_probe import gemini_document
from ctxview.importers.source import lines_from

# `session-<minute>-<the session id's first 8 characters>.json[l]` (ChatRecordingService)
_NAME = re.compile(r"session-\d{4}-\d\d-\d\dT\d\d-\d\d-([^.]{1,8})\.jsonl?")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")  # 0.61's sanitizeFilenamePart


class Sibling(Enum):
    PART = "part"  # everything it holds is stored: nothing to import from it
    NEXT = "next"  # it goes on from what is stored: the session's source from now on


def message_ids(path: Path) -> list[str]:
    """The ids of the messages a Gemini JSONL chat file holds, in the order they first come
    (a message is written again as its tool calls finish)."""
    seen: dict[str, None] = {}
    for line in lines_from(path, 0, 0):
        try:
            rec = parse_line(line.raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict) and "type" in rec and (mid := id_text(rec.get("id"))):
            seen.setdefault(mid, None)
    return list(seen)


def known_ids(import_state: dict[str, Any]) -> list[str]:
    """The ids of the messages the session's import took, oldest first (the parser remembers
    the last `gemini._KEEP`)."""
    parser = import_state.get("parser")
    msgs = parser.get("msgs") if isinstance(parser, dict) else None
    return [str(m[0]) for m in msgs if isinstance(m, list) and m] if isinstance(msgs, list) else []


def sibling(path: Path, source: str | None, import_state: dict[str, Any], ids: list[str], *,
            hooked: bool) -> Sibling | None:  # fmt: skip
    """What the file at `path`, holding the messages `ids`, is to the stored session of the same
    Gemini session id, imported from (or written live from) `source` with `import_state`."""
    if not source or Path(source).parent != path.parent:
        return None  # a copy elsewhere
    if not ids:
        return Sibling.PART  # the file a resume began and left (or one not begun yet)
    known = known_ids(import_state)
    if not known:
        # Nothing of the session's messages stored: its file held none (the file a resume left,
        # imported first). A hooked session's own file is the one its hooks named.
        return None if hooked else Sibling.NEXT
    taken = set(known)
    if ids[-1] in taken:
        return Sibling.PART  # an older file of the session (its messages end in what is stored)
    if known[-1] in ids:
        return Sibling.NEXT
    return None


def session_of(path: Path) -> str | None:
    """The session id a Gemini chat file names (its JSONL header, or its JSON document's)."""
    if path.suffix == ".json":
        doc = gemini_document(path)
        return id_text(doc.get("sessionId")) if doc is not None else None
    for line in lines_from(path, 0, 0):
        try:
            rec = parse_line(line.raw)
        except (ValueError, RecursionError):
            return None
        return id_text(rec.get("sessionId")) if isinstance(rec, dict) else None
    return None


def project_root(chat_file: Path) -> str:
    """The project folder of a chat file, from `.project_root` in the project's folder under
    `~/.gemini/tmp/` (which Gemini names by a hash or a short name, and writes that file in):
    beside `chats/`, or above it for a sub-agent's file (`chats/<session id>/`); "" when none."""
    for folder in (chat_file.parent.parent, chat_file.parent.parent.parent):
        try:
            text = read_regular(folder / ".project_root", 4096).decode("utf-8", "replace")
        except (OSError, ValueError):
            continue
        if text.strip().startswith("/"):
            return text.strip()
    return ""


def agents_folder(chat_file: Path, sid: str) -> Path:
    """Where the sub-agents of the session `sid`, whose chat file is `chat_file`, write theirs:
    `chats/<session id>/<agent id>.jsonl` (ChatRecordingService.initialize: a sub-agent's file
    is named by its agent id, in a folder named by the parent's session id, sanitized)."""
    return chat_file.parent / _UNSAFE.sub("_", sid)


def alike(name: str, path: Path) -> bool:
    """Whether a file called `name` may be one the chat file at `path`'s session wrote in its
    folder (the same short id in the name; `session_of` tells whose it is)."""
    m, n = _NAME.fullmatch(path.name), _NAME.fullmatch(name)
    return bool(m and n and n.group(1) == m.group(1))
