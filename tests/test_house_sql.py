"""The store is the only room that speaks SQL (issue 17): no module of src/ctxview outside
store/ imports sqlite3 or aiosqlite, and the store imports nothing of ctxview but itself.
Read from the source with ast, so an import inside a function or a TYPE_CHECKING block counts."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "ctxview"
SQL_MODULES = frozenset({"sqlite3", "aiosqlite"})


def _imports(path: Path) -> set[str]:
    """The modules a file imports, by full name (a relative import resolved in the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(("ctxview", *path.relative_to(PACKAGE).parent.parts))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                out.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                out.add(node.module)
    return out


def _files() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50, f"the package was not found at {PACKAGE}"
    return files


def _room(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0]


def _sql_importers() -> dict[Path, set[str]]:
    return {p: found for p in _files() if (found := {m.split(".")[0] for m in _imports(p)}
                                           & SQL_MODULES)}  # fmt: skip


def test_only_the_store_imports_sqlite() -> None:
    outside = {str(p.relative_to(PACKAGE)): sorted(m) for p, m in _sql_importers().items()
               if _room(p) != "store"}  # fmt: skip
    assert not outside, f"SQL outside src/ctxview/store/: {outside}"


def test_the_store_imports_nothing_above_it() -> None:
    climbs = {str(p.relative_to(PACKAGE)): sorted(up) for p in _files() if _room(p) == "store"
              if (up := {m for m in _imports(p) if m.split(".")[0] == "ctxview"
                         and not m.startswith("ctxview.store")})}  # fmt: skip
    assert not climbs, f"the store imports from the rooms above it: {climbs}"
