"""The house's arrows (README.md, "The house"): every import between ctxview's modules, at module
level, in a function or under TYPE_CHECKING, read with ast from src/ctxview. No two modules
import each other, however far round; a room imports only the rooms its arrows name."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ctxview"

# What each room may import besides itself. `cli.py` is the commands' room; the package's own
# `__init__` (a version, nothing imported) is open to all.
BOTTOM = {"engine", "rules", "tools", "files", "store", "context", "report", "prompts"}
EVERY = BOTTOM | {
    "agents",
    "proxy",
    "importers",
    "export",
    "sync",
    "serve",
    "demo",
    "viewer",
    "themes",
}
ARROWS: dict[str, set[str]] = {
    "commands": EVERY,
    "agents": BOTTOM | {"importers"},  # the hooks import the transcript as it is written
    # the request rows the importer writes; the failures doctor reads (agents/failures.py)
    "proxy": BOTTOM | {"importers", "agents"},
    "importers": BOTTOM | {"export"},  # ctxview's own export read back (its format)
    "demo": BOTTOM,
    "serve": BOTTOM,
    "export": {"store", "rules", "context", "report"},  # never runs a tool
    "sync": {"store", "rules", "context", "report"},  # never runs a tool
    "viewer": {"store", "rules", "context", "report", "themes"},  # reads the store only
    "engine": BOTTOM - {"engine"},
    "context": {"store", "rules"},
    "report": {"store", "rules", "context"},
    "prompts": {"rules"},
    "tools": {"files"},
    "store": {"files"},  # the store knows no rules
    "files": set(),
    "rules": set(),  # pure functions
    "themes": set(),
}
# Imports that still climb, each waiting for the change that removes it (the test fails when
# one is gone, so that it leaves this list too).
WAITING: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["ctxview", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module of ctxview that `name` (a module or a name in one) is, or None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            target = _known(name) if name.startswith("ctxview") else None
            if target is not None and target != module:
                found.add(target)
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return ""  # the package itself
    return "commands" if parts[1] == "cli" else parts[1]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph`, as the modules round it (the first again at the end), or None."""
    state: dict[str, int] = {}  # 1 on the path being walked, 2 done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := walk(start)):
            return found
    return None


def test_the_walk_sees_every_kind_of_import() -> None:
    """A function's import and a TYPE_CHECKING one count: both were how circles hid."""
    assert "ctxview.viewer.screens.search" in GRAPH["ctxview.viewer.screens.sessions"]  # in a def
    assert "ctxview.importers.hub" in GRAPH["ctxview.importers.claude_code"]  # TYPE_CHECKING
    assert "ctxview.tools.search" in GRAPH["ctxview.engine.own_tools"]  # `from x import y`


def test_find_cycle_names_the_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def test_every_room_is_in_the_table() -> None:
    rooms = {room(m) for m in MODULES} - {""}
    assert rooms == set(ARROWS), "rooms without arrows, or arrows without a room"


def test_imports_follow_the_arrows() -> None:
    climbing = sorted(
        f"{module} -> {target} ({room(module)} may import {sorted(ARROWS[room(module)])})"
        for module, targets in GRAPH.items()
        for target in targets
        if room(module) not in ("", room(target))
        and room(target) != ""
        and room(target) not in ARROWS[room(module)]
        and (module, target) not in WAITING
    )
    assert not climbing, "imports against the arrows:\n" + "\n".join(climbing)
    # The package itself is importable by all because it imports nothing.
    assert GRAPH["ctxview"] == set()


def test_the_waiting_list_is_still_true() -> None:
    gone = [f"{a} -> {b}" for a, b in WAITING if b not in GRAPH.get(a, set())]
    assert not gone, "no longer imported (take it off WAITING): " + ", ".join(gone)
