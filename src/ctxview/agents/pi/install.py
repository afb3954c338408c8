"""`ctxview install pi [--project | --user]`: ctxview's pi extension, `ctxview.ts`, in
`.pi/extensions/` (this project, the default) or `~/.pi/agent/extensions/` (`--user`;
`$PI_CODING_AGENT_DIR/extensions/` when set), the folders pi loads extensions from by itself.

The file is `extension.ts` with the store, the interpreter and the hook client's path filled
in; the extension reaches the store's resident engine over its command socket, in this user's
private folder under /tmp (`agents/engine_socket.py`), so no secret is needed. pi takes
no MCP servers: `recall` is a tool of the extension. `uninstall` takes the file away, and the
folders install made for it (a sidecar `ctxview-install.json` beside it says which); a
`ctxview.ts` that is not ctxview's is never overwritten nor removed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ctxview.agents.claude_code.install import (
    InstallError,
    ctxview_python,
    store_of,
    write_atomic,
)

NAME = "ctxview.ts"
SIDECAR = "ctxview-install.json"
MARK = "// ctxview's extension for pi"  # the first line of every file install writes
SOURCE = Path(__file__).with_name("extension.ts")


@dataclass
class Plan:
    """The extension to write or take away, and a line per change for the person."""

    target: Path
    text: str | None  # what to write (None: uninstall)
    changes: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    made: list[Path] = field(default_factory=list)  # folders this install creates

    def write(self, *, remove_empty: bool = False) -> list[Path]:
        sidecar = self.target.with_name(SIDECAR)
        if self.text is not None:
            if _read(self.target) == self.text:
                return []
            for new in self.made:
                new.mkdir(mode=0o755, exist_ok=True)
            write_atomic(self.target, self.text)
            if self.made or not sidecar.exists():
                made = [str(p) for p in self.made] or _sidecar(sidecar)
                write_atomic(sidecar, json.dumps({"version": 1, "made": made}, indent=2) + "\n")
            return [self.target]
        if self.target.exists():
            self.target.unlink()
            self.removed.append(self.target)
        made = _sidecar(sidecar)
        sidecar.unlink(missing_ok=True)
        for name in sorted(made, key=len, reverse=True):  # the deepest first
            p = Path(name)
            if p.is_dir() and not any(p.iterdir()):
                p.rmdir()
        return []


def folder(scope: str, cwd: Path, home: Path) -> Path:
    """Where pi looks for extensions in that scope."""
    if scope == "user":
        agent = os.environ.get("PI_CODING_AGENT_DIR")
        return (Path(agent).expanduser() if agent else home / ".pi" / "agent") / "extensions"
    return cwd / ".pi" / "extensions"


def extension_text(store: Path) -> str:
    from ctxview.agents import hook_client

    text = SOURCE.read_text(encoding="utf-8")
    for key, value in (("__CTXVIEW_STORE__", str(store)), ("__CTXVIEW_PYTHON__", ctxview_python()),
                       ("__CTXVIEW_HOOK_CLIENT__", str(Path(hook_client.__file__).absolute()))):  # fmt: skip
        text = text.replace(key, json.dumps(value)[1:-1])
    return text


def install(scope: str, cwd: Path, home: Path, store: Path | None = None) -> Plan:
    where = store_of(store)
    target = folder(scope, cwd, home) / NAME
    found = _read(target)
    if found is not None and not found.startswith(MARK):
        raise InstallError(f"{target} is not ctxview's extension; move it away first.")
    text = extension_text(where)
    plan = Plan(target, text)
    made: list[Path] = []
    p = target.parent
    while not p.exists():
        made.append(p)
        p = p.parent
    plan.made = list(reversed(made))
    if found != text:
        plan.changes.append(f"{'updated' if found else 'added'} ctxview's pi extension "
                            f"(store {where})")  # fmt: skip
    plan.notes.append("pi loads it at its next start (or /reload); `recall` is one of its tools.")
    return plan


def uninstall(scope: str, cwd: Path, home: Path) -> Plan:
    target = folder(scope, cwd, home) / NAME
    found = _read(target)
    plan = Plan(target, None)
    if found is None:
        return plan
    if not found.startswith(MARK):
        raise InstallError(f"{target} is not ctxview's extension; it was left as it is.")
    plan.changes.append(f"removed ctxview's pi extension {target}")
    return plan


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _sidecar(path: Path) -> list[str]:
    try:
        made = json.loads(path.read_text(encoding="utf-8")).get("made")
    except (OSError, ValueError, AttributeError):
        return []
    return [m for m in made if isinstance(m, str)] if isinstance(made, list) else []
