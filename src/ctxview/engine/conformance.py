"""The conformance runner: the spec's cases (conformance/*.json) against the engine.

Each case runs in a fresh session over a fresh temporary workspace, in one temporary store.
"""

from __future__ import annotations

import difflib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxview.engine.session import Session
from ctxview.store.writer import Writer


class CaseFileError(Exception):
    """A case file that cannot be read; one sentence."""


def expand(text: Any) -> str:
    """TEXT = str | [str | GEN, ...], list items joined with "\\n"."""
    if isinstance(text, str):
        return text
    if isinstance(text, dict):
        return _gen(text)
    if isinstance(text, list):
        return "\n".join(expand(item) for item in text)
    raise ValueError(f"not a TEXT: {text!r}")


def _gen(gen: dict[str, Any]) -> str:
    if "lines" in gen:
        a, b = gen["lines"]
        return "\n".join(gen["template"].format(n=i) for i in range(a, b + 1))
    if "repeat" in gen:
        repeated: str = gen["repeat"] * gen["times"]
        return repeated
    raise ValueError(f"unknown generator {gen!r}")


@dataclass
class Failure:
    case: str
    step: int
    message: str


def check(expect: Any, actual: str) -> str | None:
    """None when `actual` meets `expect`, else what differs."""
    if isinstance(expect, dict) and "template" not in expect and "repeat" not in expect:
        problems = []
        if "starts" in expect and not actual.startswith(want := expand(expect["starts"])):
            problems.append(f"does not start with:\n{_show(want)}")
        if "ends" in expect and not actual.endswith(want := expand(expect["ends"])):
            problems.append(f"does not end with:\n{_show(want)}")
        for piece in expect.get("contains", []):
            if (want := expand(piece)) not in actual:
                problems.append(f"does not contain:\n{_show(want)}")
        if "lines" in expect and (n := actual.count("\n") + 1) != expect["lines"]:
            problems.append(f"has {n} lines, not {expect['lines']}")
        if problems:
            return "\n".join(problems) + f"\nactual:\n{_show(actual)}"
        return None
    want = expand(expect)
    if want == actual:
        return None
    diff = difflib.unified_diff(
        want.split("\n"), actual.split("\n"), "expected", "actual", n=2, lineterm=""
    )
    return "\n".join(_short(line) for line in list(diff)[:60])


def _short(line: str, width: int = 200) -> str:
    return line if len(line) <= width else line[:width] + f"… ({len(line)} chars)"


def _show(text: str, lines: int = 12) -> str:
    parts = text.split("\n")
    shown = [_short(p) for p in parts[:lines]]
    if len(parts) > lines:
        shown.append(f"… ({len(parts) - lines} more lines)")
    return "\n".join("  | " + p for p in shown)


def load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CaseFileError(f"There is no case file {path}.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseFileError(f"The case file {path} cannot be read: {exc}.") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise CaseFileError(f"The case file {path} has no list of cases.")
    return doc


def _write_files(root: Path, files: dict[str, Any]) -> None:
    for rel, text in files.items():
        target = root / rel
        if text is None:
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(expand(text).encode("utf-8"))


async def run_case(writer: Writer, case: dict[str, Any], tmp: Path) -> list[Failure]:
    name = case.get("name", "?")
    root = tmp / "ws"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir()
    _write_files(root, case.get("files", {}))
    session = await Session.start(writer, root, title=name, config=case.get("config"),
                                  source="conformance")  # fmt: skip
    failures: list[Failure] = []
    for i, step in enumerate(case.get("steps", []), 1):
        if "call" in step:
            if "output" in step:
                actual = await session.insert(step["call"], step.get("args", {}),
                                              expand(step["output"]))  # fmt: skip
            else:
                actual = await session.run(step["call"], step.get("args", {}))
        elif "compact" in step:
            actual = await session.compact(expand(step["compact"]))
        elif "files" in step:
            _write_files(root, step["files"])
            continue
        elif "message" in step:
            await session.message(step.get("role", "user"), expand(step["message"]),
                                  usage=step.get("usage"))  # fmt: skip
            continue
        elif "context" in step:
            # The context as sent at the next request (src/ctxview/context/state.py), serialised.
            actual = await session.context_text()
            step = {**step, "expect": step["context"]}
        elif "state" in step:
            for problem in _check_state(session, step["state"]):
                failures.append(Failure(name, i, problem))
            continue
        else:
            failures.append(Failure(name, i, f"unknown step {sorted(step)}"))
            continue
        if "expect" in step and (wrong := check(step["expect"], actual)):
            failures.append(Failure(name, i, wrong))
    return failures


def _check_state(session: Session, want: dict[str, Any]) -> list[str]:
    """`{"state": {...}}`: the context's state now. `elided`: the ids sent as elision stubs;
    `strides`: the strides taken; `requests`: the requests made; `compact_due`: the flag."""
    state = session.context_state
    actual: dict[str, Any] = {
        "elided": sorted(session.ref(rid) for rid in state.elided_at if _in_context(state, rid)),
        "strides": len(state.strides),
        "requests": len(state.requests),
        "compact_due": state.compact_due,
        "boundary": state.boundary,
    }
    problems = []
    for key, value in want.items():
        if key not in actual:
            problems.append(f"unknown state key {key!r}")
        elif (sorted(value) if key == "elided" else value) != actual[key]:
            problems.append(f"state {key}: expected {value!r}, actual {actual[key]!r}")
    return problems


def _in_context(state: Any, rid: int) -> bool:
    return any(m.rid == rid and m.stub is not None for m in state.msgs)


async def run_files(paths: list[Path], out: Any = None) -> tuple[int, int]:
    """Run every case of every file, print each failure, end with `N passed, M failed`."""
    import sys

    out = out or sys.stdout
    docs = [(p, load(p)) for p in paths]
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="ctxview-conformance-") as tmpdir:
        tmp = Path(tmpdir)
        writer = await Writer.open(tmp / "store" / "store.db")
        try:
            for path, doc in docs:
                for case in doc["cases"]:
                    try:
                        failures = await run_case(writer, case, tmp)
                    except Exception as exc:  # a crash is a failure of that case, not of the run
                        failures = [Failure(case.get("name", "?"), 0,
                                            f"crashed: {type(exc).__name__}: {exc}")]  # fmt: skip
                    if failures:
                        failed += 1
                        for f in failures:
                            print(f"FAIL {path.name}: {f.case} (step {f.step})", file=out)
                            print(f.message, file=out)
                            print(file=out)
                    else:
                        passed += 1
        finally:
            await writer.close()
    print(f"{passed} passed, {failed} failed", file=out)
    return passed, failed
