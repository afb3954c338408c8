"""A fuzzer for `ctxview import`: real transcripts (../shared/realdata, when present) and our own
fixtures, broken in the ways files break (truncation, byte flips, wrong types for a field,
invalid UTF-8, NUL, deep nesting (and every depth limit at every place, `depth_cases`), duplicate uuids, reordering, CRLF, BOM, lines that are not
objects, huge numbers, NaN), each imported by the real command in this process, followed on the
command line by a good file. A case fails when anything escapes as a traceback, when the store
is called damaged, or when the good file after the broken one is not imported whole.

Used by tests/test_import_fuzz.py (a fixed seed, a few hundred cases) and bench/import_fuzz.py
(as many as asked)."""

from __future__ import annotations

import contextlib
import io
import json
import random
import sqlite3
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "import"
REALDATA = ROOT.parent / "shared" / "realdata"
# The good file imported after each broken one; its events are counted once, clean.
GOOD = FIXTURES / "claude_session.jsonl"


def sources() -> list[Path]:
    found = [p for p in sorted(FIXTURES.glob("*.jsonl")) if "neither" not in p.name]
    if REALDATA.is_dir():
        found += [p for p in sorted(REALDATA.rglob("*.jsonl")) if p.stat().st_size < 400_000]
    return found


# Values put in place of a field: every JSON type, and the ones that broke the importer.
_NASTY: list[Any] = [
    None, True, False, 0, -1, 2**63, -(2**63) - 1, 2**64 + 7, 10**400, 1.5, float("nan"),
    float("inf"), "", "x", "\ud800", "a\udfffb", "nul\u0000here", "/tmp/\u0000", "\ufeff",
    [], {}, [None], {"": None}, ["/a", "/b"], {"path": "/x"}, "9" * 5000,
    "1970-01-01T00:00:00Z", "not a time", "9999-12-31T23:59:59Z", "-000001-01-01",
]  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            yield from _paths(v, (*prefix, i))


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _set(value[path[0]], path[1:], new)
    return value


def _dumps(value: Any) -> bytes:
    # ensure_ascii: a lone surrogate goes in as the escape a real file would carry.
    return json.dumps(value, ensure_ascii=True).encode()


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _wrong_type(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    for _ in range(3):
        i = rng.randrange(len(lines))
        try:
            rec = json.loads(lines[i])
        except (ValueError, RecursionError):
            continue
        paths = list(_paths(rec))
        path = rng.choice(paths)
        lines[i] = _dumps(_set(rec, path, rng.choice(_NASTY)))
    return b"\n".join(lines)


def _field_everywhere(rng: random.Random, data: bytes) -> bytes:
    """One well-known field set to a nasty value in every line that has it."""
    key = rng.choice(["sessionId", "cwd", "uuid", "parentUuid", "timestamp", "type", "message",
                      "payload", "agentId", "isSidechain", "toolUseResult", "id"])  # fmt: skip
    new = rng.choice(_NASTY)
    out = []
    for line in _lines(data):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            out.append(line)
            continue
        if isinstance(rec, dict):
            if key in rec:
                rec[key] = new
            if isinstance(rec.get("payload"), dict) and key in rec["payload"]:
                rec["payload"][key] = new
            if isinstance(rec.get("message"), dict) and key in rec["message"]:
                rec["message"][key] = new
        out.append(_dumps(rec))
    return b"\n".join(out)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _flip(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def _invalid_utf8(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return (
        data[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80"]) + data[i:]
    )


def _nul(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"\x00" * rng.randint(1, 4) + data[i:]


def _deep(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    depth = rng.choice([600, 5000, 100_000])
    lines.insert(i, b"[" * depth + b"]" * depth)
    try:
        rec = json.loads(lines[min(i + 1, len(lines) - 1)])
        paths = list(_paths(rec))
        nested: Any = "x"
        for _ in range(rng.choice([50, 1200])):
            nested = {"content": [nested]}
        lines[min(i + 1, len(lines) - 1)] = json.dumps(
            _set(rec, rng.choice(paths), nested)
        ).encode()
    except (ValueError, RecursionError):
        pass
    return b"\n".join(lines)


def _duplicate(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    for _ in range(rng.randint(1, 3)):
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def _reorder(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    if rng.random() < 0.5:
        rng.shuffle(lines)
    else:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _crlf(rng: random.Random, data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def _bom(rng: random.Random, data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data


def _odd_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    for _ in range(rng.randint(1, 4)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([
            b"null", b"[]", b"{}", b'"text"', b"1", b"true", b"NaN", b"-Infinity", b"1e999",
            b'{"type": null}', b'{"type": "user"}', b'{"type": "assistant", "message": null}',
            b'{"type": "response_item", "payload": []}', b"\t", b"\x00", b"{" * 3,
        ]))  # fmt: skip
    return b"\n".join(lines)


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "truncate": _truncate, "flip": _flip, "wrong_type": _wrong_type,
    "field_everywhere": _field_everywhere, "invalid_utf8": _invalid_utf8, "nul": _nul,
    "deep": _deep, "duplicate": _duplicate, "reorder": _reorder, "crlf": _crlf, "bom": _bom,
    "odd_lines": _odd_lines,
}  # fmt: skip


@dataclass
class Outcome:
    case: str
    ok: bool
    why: str = ""


def _events(store: Path, source_path: Path) -> int | None:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT id FROM sessions WHERE source_path = ?",
                           (str(source_path.resolve()),)).fetchone()  # fmt: skip
        if row is None:
            return None
        return conn.execute("SELECT count(*) FROM events WHERE session = ?", row).fetchone()[0]
    finally:
        conn.close()


def run_import(store: Path, *paths: Path) -> tuple[int, str]:
    """`ctxview --store STORE import PATHS...` in this process: (exit code, stderr)."""
    from ctxview.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["--store", str(store), "import", *map(str, paths)])
    return code, err.getvalue()


def good_events(work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    good = work / "good.jsonl"
    good.write_bytes(GOOD.read_bytes())
    store = work / "good.db"
    run_import(store, good)
    n = _events(store, good)
    assert n, "the good file imports"
    return n


def command_errors(err: str) -> list[str]:
    """The command's own error sentences on stderr ('ctxview: The store cannot be read ...'),
    other than refusing a file of neither format; the skipped records' list is not one."""
    return [line for line in err.splitlines() if line.startswith("ctxview:")
            and "neither a Claude Code nor a Codex" not in line]  # fmt: skip


def run_case(work: Path, name: str, data: bytes, expected_good: int) -> Outcome:
    for f in work.glob("case*"):
        f.unlink()
    store = work / "case.db"
    bad = work / "case-bad.jsonl"
    bad.write_bytes(data)
    good = work / "case-good.jsonl"
    good.write_bytes(GOOD.read_bytes())
    try:
        code, err = run_import(store, bad, good)
    except BaseException as exc:  # a traceback is what this looks for
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Outcome(name, False, "".join(traceback.format_exception(exc))[-1500:])
    if "Traceback" in err or command_errors(err):
        return Outcome(name, False, err[-1500:])
    if code not in (0, 1) or (code == 1 and "neither a Claude Code nor a Codex" not in err):
        return Outcome(name, False, f"exit {code}: {err[-800:]}")
    got = _events(store, good)
    if got != expected_good:
        return Outcome(name, False, f"the good file after it has {got} events, not "
                                    f"{expected_good}: {err[-600:]}")  # fmt: skip
    return Outcome(name, True)


def cases(seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(seed)
    files = sources()
    datas = {p: p.read_bytes() for p in files}
    names = sorted(MUTATIONS)
    for n in range(count):
        src = files[n % len(files)]
        kind = (
            names[(n // len(files) + n) % len(names)] if n < len(names) * 3 else rng.choice(names)
        )
        data = datas[src]
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            data = MUTATIONS[kind](rng, data) if data else data
            kind2 = rng.choice(names)
            kind = kind2 if rng.random() < 0.3 else kind
        yield f"#{n} {kind} of {src.name}", data


def every_field_cases(files: list[Path]) -> Iterator[tuple[str, bytes]]:
    """Wrong types for every field: for each file and each nasty value, one transcript holding
    every record of the file with each of its fields (at any depth) in turn set to that value.
    A bad line never stops the import, so one file tries them all."""
    for src in files:
        lines = src.read_bytes().split(b"\n")
        for k, value in enumerate(_NASTY):
            out: list[bytes] = []
            for line in lines:
                out.append(line)
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                for path in list(_paths(rec))[1:]:
                    out.append(_dumps(_set(json.loads(line), path, value)))
            yield f"every field of {src.name} = nasty[{k}] {value!r:.30}", b"\n".join(out)


# Depths around every limit there is: ctxview's own (importers.common.MAX_DEPTH, 200), the
# window where json parses but a copy or a dump of the parser's state runs out of stack (~500
# for copy.deepcopy), json's and orjson's own (~1000, 1024), and far past them.
DEPTHS = (150, 201, 500, 990, 1025, 5000, 100_000)


_PLACE = "@@deep@@"


def _deep_text(depth: int, kind: str) -> str:
    """The JSON text of a value nested `depth` levels (lists, or dicts and lists in turn),
    built as text: json.dumps itself runs out of stack past ~1000 levels."""
    if kind == "list":
        return "[" * (depth - 1) + '"x"' + "]" * (depth - 1)
    pairs = (depth - 1) // 2
    odd = (depth - 1) % 2
    return '{"k": [' * pairs + "[" * odd + '"x"' + "]" * odd + "]}" * pairs


def depth_cases(files: list[Path]) -> Iterator[tuple[str, bytes]]:
    """For each file and depth, one transcript holding every record of the file with a value
    nested that deep in turn at each of its places (a tool call's input, its result, a message's
    content, ...) and, for Codex, in a call's arguments (a JSON string): a bad line never stops
    the import, so one file tries them all. Past json's own stack, a few places per file (each
    such line is as long as it is deep)."""
    for src in files:
        lines = src.read_bytes().split(b"\n")
        for depth in DEPTHS:
            kind = "list" if depth % 2 else "mixed"
            deep = _deep_text(depth, kind).encode()
            out: list[bytes] = []
            budget = 6 if depth > 1025 else None
            for line in lines:
                out.append(line)
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(rec, dict):
                    continue
                places = [p for p in _paths(rec) if 1 <= len(p) <= 5]
                if budget is not None:
                    places = places[-1:] if budget > 0 else []
                    budget -= len(places)
                for path in places:
                    try:
                        text = _dumps(_set(json.loads(line), path, _PLACE))
                    except (TypeError, IndexError, KeyError):
                        continue
                    out.append(text.replace(json.dumps(_PLACE).encode(), deep, 1))
                payload = rec.get("payload")
                if isinstance(payload, dict) and payload.get("type") == "function_call":
                    args = {**rec, "payload": {**payload, "arguments": deep.decode()}}
                    out.append(_dumps(args))
            out.append(_pending(lines, deep))
            yield f"depth {depth} ({kind}) in every place of {src.name}", b"\n".join(out)


def _pending(lines: list[bytes], deep: bytes) -> bytes:
    """A last record that leaves the deep value in the parser's state at the end of the file (a
    call made and not answered yet): what an import and a `follow` keep for the next line."""
    first = json.loads(lines[0])
    if first.get("payload") is not None or first.get("record_type") or "instructions" in first:
        rec = {"timestamp": "2026-01-02T10:59:00.000Z", "type": "response_item",
               "payload": {"type": "function_call", "call_id": "deep-1", "name": "shell",
                           "arguments": _PLACE}}  # fmt: skip
        return _dumps(rec).replace(json.dumps(_PLACE).encode(), json.dumps(deep.decode()).encode())
    rec = {"type": "assistant", "uuid": "deep-u", "sessionId": first.get("sessionId", "s"),
           "timestamp": "2026-01-02T10:59:00.000Z",
           "message": {"id": "deep-m", "role": "assistant", "model": "m", "content": [
               {"type": "tool_use", "id": "deep-1", "name": "Bash",
                "input": {"command": _PLACE}}]}}  # fmt: skip
    return _dumps(rec).replace(json.dumps(_PLACE).encode(), deep, 1)


def follow_case(work: Path, name: str, data: bytes) -> Outcome:
    """The same file imported as `follow` does, as it grows: half of it, then all of it, each
    step ending in the parser's provisional state (the end of what is written)."""
    import asyncio

    from ctxview.importers.runner import FileImporter
    from ctxview.store import Writer

    store = work / "follow.db"
    for f in work.glob("follow*"):
        f.unlink()
    src = work / "follow.jsonl"
    half = data[: data.rfind(b"\n", 0, len(data) // 2) + 1]

    async def run() -> None:
        async with await Writer.open(store) as writer:
            importer = FileImporter(writer, src)
            src.write_bytes(half)
            await importer.step(live=True)
            src.write_bytes(data)
            await importer.step(live=True)
            await importer.step()

    try:
        asyncio.run(run())
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Outcome(name, False, "".join(traceback.format_exception(exc))[-1500:])
    return Outcome(name, True)


def fuzz(work: Path, seed: int, count: int) -> list[Outcome]:
    expected = good_events(work)
    return [run_case(work, name, data, expected) for name, data in cases(seed, count)]
