"""A fuzz of each new session format (issue 19): the built fixtures of pi, Gemini CLI (JSON and
JSONL), Copilot CLI, Cursor, OpenCode's storage/ folder and aider's history, broken by the
mutations of import_fuzz.py (truncation, byte flips, wrong types, invalid UTF-8, NUL, deep
nesting, duplicates, reordering, CRLF, BOM, odd lines), hypothesis choosing which and where,
then imported by the command: zero tracebacks, and when the file is refused, one sentence."""

from __future__ import annotations

import random
import shutil
import traceback
from pathlib import Path

from gemini_subagent_files import write as write_subagent_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from import_fuzz import MUTATIONS, command_errors, run_import
from test_import_agents import AIDER, COPILOT, CURSOR, GEMINI_JSON, GEMINI_JSONL, OPENCODE, PI

FILES = {"pi": PI, "gemini-json": GEMINI_JSON, "gemini-jsonl": GEMINI_JSONL, "copilot": COPILOT,
         "cursor": CURSOR, "aider": AIDER}  # fmt: skip
OPENCODE_FILES = sorted(p for p in OPENCODE.rglob("*.json"))


def _check(case: str, store: Path, bad: Path) -> None:
    try:
        code, err = run_import(store, bad)
    except BaseException as exc:  # a traceback is what this looks for
        if isinstance(exc, KeyboardInterrupt):
            raise
        trace = "".join(traceback.format_exception(exc))[-1500:]
        raise AssertionError(f"{case}:\n{trace}") from None
    assert "Traceback" not in err, f"{case}: {err[-1500:]}"
    assert not command_errors(err), f"{case}: {err[-800:]}"
    assert code in (0, 1), f"{case}: exit {code}: {err[-800:]}"
    if code == 1:  # refused: one sentence, on one line
        said = [line for line in err.splitlines() if line.startswith("ctxview:")]
        assert len(said) == 1 and said[0].endswith("."), f"{case}: {err[-800:]}"


_SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


@_SETTINGS
@given(name=st.sampled_from(sorted(FILES)), kinds=st.lists(st.sampled_from(sorted(MUTATIONS)),
       min_size=1, max_size=3), seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_a_broken_session_file_never_raises(tmp_path_factory, name: str, kinds: list[str],
                                            seed: int) -> None:  # fmt: skip
    work = tmp_path_factory.mktemp("fuzz")
    rng = random.Random(seed)
    data = FILES[name].read_bytes()
    for kind in kinds:
        data = MUTATIONS[kind](rng, data) if data else data
    bad = work / ("chats" if name == "gemini-json" else ".") / FILES[name].name
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(data)
    _check(f"{'+'.join(kinds)} of {name} (seed {seed})", work / "s.db", bad)


@_SETTINGS
@given(which=st.integers(0, len(OPENCODE_FILES) - 1),
       kinds=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=2),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_a_broken_opencode_folder_never_raises(tmp_path_factory, which: int, kinds: list[str],
                                               seed: int) -> None:  # fmt: skip
    work = tmp_path_factory.mktemp("fuzz-oc")
    root = work / "storage"
    shutil.copytree(OPENCODE, root)
    target = root / OPENCODE_FILES[which].relative_to(OPENCODE)
    rng = random.Random(seed)
    data = target.read_bytes()
    for kind in kinds:
        data = MUTATIONS[kind](rng, data) if data else data
    target.write_bytes(data)
    _check(f"{'+'.join(kinds)} of {target.relative_to(root)} (seed {seed})", work / "s.db", root)


@_SETTINGS
@given(second=st.sampled_from(["left", "goes-on"]), broken=st.sampled_from(["first", "second"]),
       kinds=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=3),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_a_broken_file_of_a_resumed_gemini_session_never_raises(
        tmp_path_factory, second: str, broken: str, kinds: list[str], seed: int) -> None:  # fmt: skip
    """Two chat files of one Gemini session in its folder (test_import_gemini_resume.py), the
    first imported, then one of them broken and the folder imported, then each file."""
    from test_import_gemini_resume import first_file, header, left_file, turn, write

    work = tmp_path_factory.mktemp("fuzz-gm2")
    chats = work / "tmp" / "proj" / "chats"
    first = first_file(chats, range(1, 4))
    if second == "left":
        other = left_file(chats)
    else:
        whole = [header("2026-12-02T10:00:00.000Z")] + [r for n in range(1, 6) for r in turn(n)]
        other = write(chats / "session-2026-12-02T11-00-7a1b2c3d.jsonl", whole)
    store = work / "s.db"
    assert run_import(store, first)[0] == 0
    target = first if broken == "first" else other
    rng = random.Random(seed)
    data = target.read_bytes()
    for kind in kinds:
        data = MUTATIONS[kind](rng, data) if data else data
    target.write_bytes(data)
    case = f"{'+'.join(kinds)} of the {broken} file, the second {second} (seed {seed})"
    for path in (work / "tmp", other, first):
        _check(case, store, path)


@_SETTINGS
@given(which=st.integers(0, 2), kinds=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1,
       max_size=2), seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_a_broken_gemini_sub_agent_folder_never_raises(tmp_path_factory, which: int,
                                                       kinds: list[str], seed: int) -> None:  # fmt: skip
    """A parent's chat file and its two sub-agents' (gemini_subagent_files.py), one of the three
    broken, the folder imported: the links to the invoke_agent calls are looked up either way."""
    work = tmp_path_factory.mktemp("fuzz-gm")
    parent, agents = write_subagent_files(work / "tmp")
    target = [parent, *agents][which]
    rng = random.Random(seed)
    data = target.read_bytes()
    for kind in kinds:
        data = MUTATIONS[kind](rng, data) if data else data
    target.write_bytes(data)
    _check(f"{'+'.join(kinds)} of {target.name} (seed {seed})", work / "s.db", work / "tmp")
