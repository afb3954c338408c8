"""Where a hook's failures go: a small JSON-lines log beside the store, which `ctxview doctor`
shows; when nothing can be written there (the store's folder is read-only or immutable, the
store's path runs through a regular file: the very failure to record), a log of the store's own
in this user's private socket folder (`/tmp/ctxview-<uid>/`, beside the engine's socket).
Standard library only and no pathlib (the hook client loads it on its failure path, as a plain
file), and never raises: a hook that cannot even record its failure prints nothing."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

KEEP = 200  # the newest failures kept
_MAX_BYTES = 256 << 10


def log_path(store: Path | str) -> str:
    return f"{os.fspath(store)}.hook-failures.jsonl"


def fallback_path(store: Path | str) -> str:
    """The store's failure log in this user's private socket folder (the socket's name, so one
    per store)."""
    if TYPE_CHECKING:  # the checker follows the package's import, the same module
        from ctxview.agents.engine_socket import socket_file
    else:
        try:
            from ctxview.agents.engine_socket import socket_file
        except ImportError:  # run as a file, as the hook client is: the same function, a plain file
            from engine_socket import socket_file
    return socket_file(os.fspath(store)).removesuffix(".sock") + ".hook-failures.jsonl"


def record(store: Path | str | None, event: str, what: str, detail: dict[str, Any] | None = None
           ) -> None:  # fmt: skip
    """Append one failure: when, which hook event, what went wrong (one line); beside the
    store, else in the fallback log."""
    if store is None:
        return
    entry = {"ts": time.time(), "event": event, "error": what, **(detail or {})}
    try:
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
    except (ValueError, RecursionError):
        line = json.dumps({"ts": entry["ts"], "event": str(event), "error": str(what)}) + "\n"
    if _append(log_path(store), line, make_folder=True):
        return
    try:
        fallback = fallback_path(store)
        folder = os.path.dirname(fallback)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
        if st.st_uid != os.getuid() or (st.st_mode & 0o170000) != 0o040000 or st.st_mode & 0o077:
            return  # not this user's private folder: nothing is written there
    except Exception:
        return
    _append(fallback, line, make_folder=False)


def describe(exc: BaseException, budget: float) -> str:
    """What went wrong in a hook's step, in one line (either transport): a step past its
    `budget`, a failure that says it all (`says_it_all`: its message is the sentence), or the
    exception's type and message."""
    if isinstance(exc, TimeoutError):
        return f"the step took longer than {budget:g} s"
    text = str(exc)
    if getattr(exc, "says_it_all", False) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _append(path: str, line: str, *, make_folder: bool) -> bool:
    try:
        if make_folder:
            os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(line)
        if os.path.getsize(path) > _MAX_BYTES:
            with open(path, encoding="utf-8") as f:
                kept = f.read().splitlines()[-KEEP:]
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(kept) + "\n")
    except OSError:
        return False
    return True


def clear(store: Path | str) -> None:
    """Forget the recorded failures (both logs)."""
    for path in (log_path(store), fallback_path(store)):
        try:  # noqa: SIM105 - contextlib would be one more import for the hook client
            os.unlink(path)
        except OSError:
            pass


_NAMED = ("session_id", "tool_name", "tool_use_id", "hook_event_name")


def about(raw: bytes, event: str) -> tuple[str, dict[str, Any]]:
    """The hook event and the session, tool and call a hook input names, for a failure. An
    input nested too deep to parse (json runs out of stack) is looked through as text."""
    try:
        payload = json.loads(raw)
    except RecursionError:
        payload = _scan(raw)
    except (ValueError, TypeError):
        return event, {}
    if not isinstance(payload, dict):
        return event, {}
    detail = {k: payload[k] for k in _NAMED[:3] if isinstance(payload.get(k), str)}
    name = payload.get("hook_event_name")
    return (name if isinstance(name, str) and name else event), detail


def _scan(raw: bytes) -> dict[str, str]:
    """The first `"key": "value"` of each named field in the raw input (a deep input's
    top-level fields are as likely there as anywhere)."""
    import re  # only here: a deep input is rare, and `re` costs the hook client

    found: dict[str, str] = {}
    text = raw[: 1 << 20].decode("utf-8", "replace")
    for key in _NAMED:
        m = re.search('"' + key + r'"\s*:\s*"((?:[^"\\]|\\.){0,200})"', text)
        if m:
            try:
                found[key] = json.loads(f'"{m.group(1)}"')
            except ValueError:
                continue
    return found


def read(store: Path | str) -> list[dict[str, Any]]:
    """The failures recorded (both logs), oldest first ([] when there are none)."""
    out: list[dict[str, Any]] = []
    for path in (log_path(store), fallback_path(store)):
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, dict):
                out.append(entry)
    out.sort(key=_when)
    return out


def _when(entry: dict[str, Any]) -> float:
    """When a failure was recorded; 0 for a line without a number there (edited by hand)."""
    ts = entry.get("ts")
    return ts if isinstance(ts, int | float) else 0
