"""The tool calls the hook engine answered whose events are not in the store yet, kept in
`<store>.hook-held.jsonl` (0600) from just before the answer until they are: a call's events
wait, after its answer, for Claude Code's record of the call to reach the transcript, and an
engine killed meanwhile would otherwise lose a result whose id the model already has. The engine
that starts next puts them in the store (after their records), under the ids the model saw.

One JSON line per call, appended (no sync: what a killed process wrote is in the page cache);
emptied whenever no call is held. A call too big for it (`MAX_CHARS`) is not kept.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path

from ctxview.store.records import Body, Event

MAX_CHARS = 8 << 20  # a call holding more text than this is not journaled
Step = tuple[str, list[Event], list[Body], int | None]
_EVENT_FIELDS = tuple(f.name for f in fields(Event) if f.name not in ("session", "seq"))


class Journal:
    def __init__(self, store: Path | str) -> None:
        self.path = f"{os.fspath(store)}.hook-held.jsonl"
        self._fd: int | None = None
        self._empty = True

    def add(self, key: tuple[str, str] | None, steps: list[Step]) -> None:
        size = sum(len(b.shown) + len(b.stored) for _, _, bodies, _ in steps for b in bodies)
        if size > MAX_CHARS:
            return
        line = json.dumps({"key": list(key) if key else None, "steps": [
            [sid, [{f: getattr(e, f) for f in _EVENT_FIELDS} for e in events],
             [[b.rid, b.shown, b.stored] for b in bodies], fts]
            for sid, events, bodies, fts in steps]}, ensure_ascii=False)  # fmt: skip
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(self._fd, line.encode("utf-8", "surrogatepass") + b"\n")
        self._empty = False

    def clear(self) -> None:
        """No call is held: what the file holds is in the store."""
        if self._empty:
            return
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
        self._empty = True

    def read(self) -> list[tuple[tuple[str, str] | None, list[Step]]]:
        """What a killed engine held (lines it could not finish writing are skipped)."""
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except OSError:
            return []
        self._empty = not raw
        out: list[tuple[tuple[str, str] | None, list[Step]]] = []
        for line in raw.split(b"\n"):
            try:
                entry = json.loads(line.decode("utf-8", "surrogatepass"))
                key = tuple(entry["key"]) if entry["key"] else None
                steps: list[Step] = [
                    (sid, [Event(**e) for e in events], [Body(*b) for b in bodies], fts)
                    for sid, events, bodies, fts in entry["steps"]]  # fmt: skip
            except (ValueError, KeyError, TypeError):
                continue
            out.append((key if key is None or len(key) == 2 else None, steps))
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
