"""The engine's invariants over random sessions (hypothesis), run on a real store and real files:

- ids are unique and increasing (one per result), across compactions;
- a stub points at a full result, never at another stub;
- a capped result keeps within its bounds, names itself in its elision line, and recall of it,
  window after window, gives back the whole output;
- the same calls over the same starting workspace give the same texts.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxview.engine.session import Session
from ctxview.rules.config import Config
from ctxview.rules.ids import parse_id
from ctxview.rules.lines import split_lines
from ctxview.store.writer import Writer

# Small bounds, so that capping, cutting and several recall windows happen often and cheaply.
CONFIG: dict[str, Any] = {
    "cap.max_lines": 20, "cap.head_lines": 8, "cap.tail_lines": 4,
    "cap.max_chars": 300, "cap.head_chars": 120, "cap.tail_chars": 60,
    "window.lines": 7, "compaction.rows": 3,
}  # fmt: skip
CFG = Config(CONFIG)
PATHS = ["a.txt", "./a.txt", "src/b.txt", "c.txt"]
FIRST = {"a.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "src/b.txt": "x\r\ny\r\n", "c.txt": ""}

line = st.text(alphabet="xyz ", max_size=30)
# Lines whose newlines decide whether a fourth tail line still fits tail_chars.
medium_line = st.text(alphabet="xyz", min_size=13, max_size=17)
long_line = st.integers(100, 400).map(lambda n: "L" * n)
output = st.tuples(
    st.one_of(
        st.lists(st.one_of(line, line, medium_line, long_line), max_size=45),
        st.lists(medium_line, min_size=15, max_size=30),
    ),
    st.sampled_from(["", "\n", "\r\n"]),
).map(lambda t: (t[1] if t[1] == "\r\n" else "\n").join(t[0]) + (t[1] if t[0] else ""))
content = st.lists(st.sampled_from(["1", "2", "3", "q", ""]), max_size=12).map(
    lambda ls: "".join(x + "\n" for x in ls)
)

read_op = st.tuples(st.just("read"), st.sampled_from(PATHS), st.integers(1, 12), st.integers(1, 12))
grep_op = st.tuples(st.just("grep"), st.sampled_from(["1", "q"]))
op = st.one_of(
    read_op,
    read_op,
    grep_op,
    grep_op,
    st.tuples(st.just("insert"), st.sampled_from(["grep", "bash", "fetch"]), output),
    st.tuples(st.just("write"), st.sampled_from(PATHS), content),
    st.tuples(st.just("edit"), st.sampled_from(PATHS), st.sampled_from(["1", "2", "q"])),
    st.tuples(st.just("outside"), st.sampled_from(PATHS), content),
    st.tuples(st.just("recall"), st.integers(-1, 40), st.integers(1, 9)),
    st.tuples(st.just("compact"), st.just("Summary.")),
)
ops = st.lists(op, min_size=1, max_size=25)


async def play(
    root: Path, store: Path, steps: list[tuple[Any, ...]], restart_at: int | None = None
) -> list[tuple[str, Any]]:
    """Run the steps; for each, the text the model was given and the Result built (or None).
    With `restart_at`, the session is resumed from the store before that step, as after a
    restart of the harness."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for rel, text in FIRST.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode())
    writer = await Writer.open(store)
    out: list[tuple[str, Any]] = []
    try:
        s = await Session.start(writer, root, config=CONFIG)
        for i, step in enumerate(steps):
            if i == restart_at:
                s = await Session.resume(writer, s.id)
            kind = step[0]
            if kind == "read":
                text = await s.run("read", {"path": step[1], "offset": step[2], "limit": step[3]})
            elif kind == "insert":
                text = await s.insert(step[1], {"q": 1}, step[2])
            elif kind == "write":
                text = await s.run("write", {"path": step[1], "content": step[2]})
            elif kind == "edit":
                text = await s.run("edit", {"path": step[1], "old_string": step[2],
                                            "new_string": step[2] + "!"})  # fmt: skip
            elif kind == "outside":
                (root / step[1]).write_bytes(step[2].encode())
                continue
            elif kind == "grep":
                text = await s.run("grep", {"pattern": step[1]})
            elif kind == "recall":
                target = "#ffff" if step[1] < 0 else s.ref(0x1000 + step[1])
                text = await s.run("recall", {"id": target, "limit": step[2]})
            else:
                out.append((await s.compact(step[1]), None))
                continue
            out.append((text, s.last))
    finally:
        await writer.close()
    return out


def run_session(
    steps: list[tuple[Any, ...]], restart_at: int | None = None
) -> list[tuple[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ctxview-prop-") as tmp:
        return asyncio.run(play(Path(tmp) / "ws", Path(tmp) / "store.db", steps, restart_at))


ID_AT_START = re.compile(r"\[(#[0-9a-f]+)")


@settings(max_examples=50, deadline=None)
@given(steps=ops)
def test_ids_unique_and_increasing_and_stubs_point_at_full_results(
    steps: list[tuple[Any, ...]],
) -> None:
    results = [(text, r) for text, r in run_session(steps) if r is not None]
    ids = [parse_id(ID_AT_START.match(text).group(1)) for text, _ in results]  # type: ignore[union-attr]
    assert ids == list(range(0x1000, 0x1000 + len(results)))  # one each, never reused
    assert [r.rid for _, r in results] == ids
    by_rid = {r.rid: r for _, r in results}
    for _, r in results:
        if r.rkind in ("unchanged", "same"):
            assert by_rid[r.points_to].rkind == "full"
            assert r.points_to < r.rid


ELISION = re.compile(r"^\[(\d+) lines elided, full output (#[0-9a-f]+)\]$")


def check_capped(text: str, rid_ref: str, output: str) -> None:
    body = text.split("\n", 1)[1]
    lines = body.split("\n")
    marks = [i for i, ln in enumerate(lines) if ELISION.match(ln)]
    assert len(marks) == 1
    m = ELISION.match(lines[marks[0]])
    assert m is not None and m.group(2) == rid_ref
    head, tail = lines[: marks[0]], lines[marks[0] + 1 :]
    whole = split_lines(output)
    cut = CFG["text.cut"]
    assert len(head) <= CFG["cap.head_lines"] and len(tail) <= CFG["cap.tail_lines"]
    if head and head[0].endswith(cut) and len(whole[0]) > CFG["cap.head_chars"]:
        assert head == [whole[0][: CFG["cap.head_chars"]] + cut]
    else:
        assert len("\n".join(head)) <= CFG["cap.head_chars"]
        assert head == whole[: len(head)]
    assert len("\n".join(tail)) <= CFG["cap.tail_chars"]
    assert tail == (whole[len(whole) - len(tail) :] if tail else [])
    assert int(m.group(1)) == len(whole) - len(head) - len(tail)


async def recall_all(root: Path, store: Path, output: str) -> tuple[str, list[str]]:
    root.mkdir()
    writer = await Writer.open(store)
    try:
        s = await Session.start(writer, root, config=CONFIG)
        shown = await s.insert("bash", {"command": "x"}, output)
        got: list[str] = []
        offset = 1
        while True:
            text = await s.run("recall", {"id": "1000", "offset": offset})
            head, _, body = text.partition("\n")
            m = re.match(r"\[#[0-9a-f]+ recall #1000 lines (\d+)-(\d+) of (\d+)\]$", head)
            if m is None:
                assert text.endswith(("empty]", "in this session.")) or "past the end" in text
                break
            assert int(m.group(2)) - int(m.group(1)) + 1 <= CFG["window.lines"]
            got.extend(body.split("\n"))
            if int(m.group(2)) == int(m.group(3)):
                break
            offset = int(m.group(2)) + 1
        return shown, got
    finally:
        await writer.close()


@settings(max_examples=80, deadline=None)
@given(out=output)
def test_capped_output_within_bounds_and_recall_gives_it_all_back(out: str) -> None:
    with tempfile.TemporaryDirectory(prefix="ctxview-prop-") as tmp:
        shown, got = asyncio.run(recall_all(Path(tmp) / "ws", Path(tmp) / "s.db", out))
    assert got == split_lines(out)
    if len(out) > CFG["cap.max_chars"] or len(split_lines(out)) > CFG["cap.max_lines"]:
        check_capped(shown, "#1000", out)
    else:
        assert shown == "[#1000]" + ("\n" + out.replace("\r\n", "\n") if out else "")


@settings(max_examples=30, deadline=None)
@given(steps=ops)
def test_same_calls_over_same_workspace_give_same_texts(steps: list[tuple[Any, ...]]) -> None:
    first = [text for text, _ in run_session(steps)]
    again = [text for text, _ in run_session(steps)]
    assert first == again


@settings(max_examples=30, deadline=None)
@given(steps=ops, where=st.integers(0, 25))
def test_a_resumed_session_answers_as_one_that_never_stopped(
    steps: list[tuple[Any, ...]], where: int
) -> None:
    """Ids, stubs and notes after a restart: the dedupe table and the counter come back."""
    straight = [text for text, _ in run_session(steps)]
    resumed = [text for text, _ in run_session(steps, restart_at=min(where, len(steps) - 1))]
    assert resumed == straight
