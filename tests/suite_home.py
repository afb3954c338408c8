"""The suite's own home (tests/conftest.py): the environment that points every test and every
process it starts into a temporary folder, and a listing of the user's own places to compare
before and after a run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from ctxview.agents import failures
from ctxview.agents.hook_client import socket_path

# Set by the user's shell or by an agent the suite runs under, read by ctxview, Claude Code, Codex,
# Gemini CLI, tmux or libpq: unset for the run (a test that wants one sets it for its own process).
_UNSET_PREFIXES = ("CTXVIEW_", "CLAUDE_", "CLAUDECODE", "CODEX_", "ANTHROPIC_", "OPENAI_",
                   "GEMINI_", "GOOGLE_", "TMUX", "PG", "CI_")  # fmt: skip
# Set by a CI service: Gemini CLI (its `is-in-ci` check: CI, CONTINUOUS_INTEGRATION or any CI_*)
# then never starts its interactive UI, so a test typing into it in tmux saw an empty screen.
_UNSET = frozenset({"CI", "CONTINUOUS_INTEGRATION"})

Listing = dict[str, tuple[int, int] | None]  # path -> (size, mtime in ns); None: a folder


def own_places(env: Mapping[str, str]) -> tuple[list[Path], list[Path]]:
    """Where the user's own files are, by `env`: ctxview's (its state folders, the store that
    CTXVIEW_STORE names) and the agents' (Claude Code's and Codex's folders)."""
    home = Path(env.get("HOME") or Path.home())
    state = Path(env["XDG_STATE_HOME"]) if env.get("XDG_STATE_HOME") else home / ".local" / "state"
    ctxview = [home / ".local" / "state" / "ctxview", state / "ctxview"]
    if env.get("CTXVIEW_STORE"):
        store = Path(env["CTXVIEW_STORE"]).expanduser()
        ctxview += [store.parent / f"{store.name}{end}" for end in ("", "-wal", "-shm")]
    agents = [Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude"),
              Path(env.get("CODEX_HOME") or home / ".codex")]  # fmt: skip
    return sorted({p.expanduser() for p in ctxview}), sorted({p.expanduser() for p in agents})


def listing(places: list[Path]) -> Listing:
    """Every file and folder under `places` (the places themselves too, when they exist)."""
    out: Listing = {}
    for top in places:
        if top.is_file():
            st = top.stat()
            out[str(top)] = (st.st_size, st.st_mtime_ns)
            continue
        for folder, dirs, files in os.walk(top):
            out[folder] = None
            for name in (*dirs, *files):
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    continue  # gone while listed
                out[path] = None if name in dirs else (st.st_size, st.st_mtime_ns)
    return out


def isolate(env: MutableMapping[str, str], home: Path) -> None:
    """Point `env` at `home` (made here): HOME, the XDG folders, ctxview's store."""
    for key in [k for k in env if k.startswith(_UNSET_PREFIXES) or k in _UNSET]:
        del env[key]
    folders = {"HOME": home, "XDG_CONFIG_HOME": home / ".config",
               "XDG_DATA_HOME": home / ".local" / "share", "XDG_STATE_HOME": home / ".local" / "state",
               "XDG_CACHE_HOME": home / ".cache"}  # fmt: skip
    for key, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        env[key] = str(folder)
    env["CTXVIEW_STORE"] = str(home / "ctxview-store.db")  # a test that wants the default unsets it


def leave_no_trace(store: Path) -> None:
    """What `store` left in this user's socket folder (`/tmp/ctxview-<uid>/`, outside every
    temporary folder): its fallback failure log and its engine's lock file. Left there, a later
    run whose temporary folder has the same path (pytest numbers them anew once its own are
    removed) read that run's failures as its own."""
    failures.clear(store)
    with contextlib.suppress(OSError):
        os.unlink(f"{socket_path(store)}.lock")
