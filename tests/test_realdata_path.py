"""Tests and benchmarks find the real transcripts at ../shared/realdata (beside the repository)
and nowhere else: no machine-specific fallback, so a run elsewhere skips with its reason rather
than reading whatever a path on this machine holds."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> list[Path]:
    return sorted(
        p
        for folder in ("tests", "bench")
        for p in (ROOT / folder).rglob("*.py")
        if "__snapshots__" not in p.parts
        and "node_modules" not in p.parts  # the agents npm installs
        and ".venv" not in p.parts  # and aider's own venv (tests/agents/aider/.venv)
    )


def _assigned(node: ast.AST) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def test_realdata_is_only_beside_the_repository() -> None:
    problems = []
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(ROOT)
        assignments: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if "realdata" in text and text.lstrip().startswith(("/", "~")):
                    problems.append(f"{where}:{node.lineno}: an absolute path {text!r}")
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                for name in _assigned(node):
                    if "REALDATA" in name.upper():
                        assignments[name] = assignments.get(name, 0) + 1
        problems += [
            f"{where}: {name} is assigned {n} times (a fallback?)"
            for name, n in assignments.items()
            if n > 1
        ]
    assert not problems, "\n".join(problems)


def test_the_realdata_paths_point_beside_the_repository() -> None:
    """Each module's REALDATA, evaluated as the module would, is ROOT/../shared/realdata."""
    expected = (ROOT.parent / "shared" / "realdata").resolve()
    checked = 0
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        scope: dict[str, object] = {"__file__": str(path), "Path": Path}
        for node in tree.body:
            if isinstance(node, ast.Assign) and _assigned(node) in (["ROOT"], ["REALDATA"]):
                code = compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec")
                exec(code, scope)
        if "REALDATA" in scope:
            got = Path(scope["REALDATA"]).resolve()  # type: ignore[arg-type]
            assert got == expected, f"{path.relative_to(ROOT)}: {got}"
            checked += 1
    assert checked >= 3
