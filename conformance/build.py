"""Writes context.json: the cases of context hygiene 3.0.0 (spec §1–§7, DESIGN decisions 1–12).

Every expected text here is written from the spec and DESIGN.md, not copied from the engine:
the only things computed are hashes of the files a case writes (sha256, as §1 says) and the
long repetitive texts (through the case format's generators). Run `python conformance/build.py`
after editing, then `ctxview conformance conformance/context.json`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

EMPTY_SHA = "e3b0c442"


def expand(text: Any) -> str:
    """The case format's TEXT, as the runner expands it (so a case's hash can be computed)."""
    if isinstance(text, str):
        return text
    if isinstance(text, dict):
        if "lines" in text:
            a, b = text["lines"]
            return "\n".join(text["template"].format(n=i) for i in range(a, b + 1))
        return text["repeat"] * text["times"]
    return "\n".join(expand(t) for t in text)


def sha(text: Any) -> str:
    return hashlib.sha256(expand(text).encode("utf-8")).hexdigest()[:8]


def sha_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:8]


def gen(a: int, b: int, template: str) -> dict[str, Any]:
    return {"lines": [a, b], "template": template}


def rep(s: str, n: int) -> dict[str, Any]:
    return {"repeat": s, "times": n}


def numbered(lines: list[str], first: int = 1) -> str:
    return "\n".join(f"{first + i}: {line}" for i, line in enumerate(lines))


CASES: list[dict[str, Any]] = []

SHA12_ABC = hashlib.sha256(b"a\nb\nc\n").hexdigest()[:12]
LATIN1 = sha_bytes(b"caf\xe9\nok\n")
# Hashes of texts with escapes (Python 3.11 f-strings take no backslash).
H1 = sha("one\r\ntwo\r\n")
H2 = sha("a\nb")
H3 = sha("a\nb\n")
H4 = sha("a\n\nb\n\n")
H5 = sha("PNG\x00\x00data")
H6 = sha("a\nB\nc\n")
H7 = sha("x\r\ny\r\n")
H8 = sha("a\nb\nb2\nb3\nc\n")
H9 = sha("one\r\nTWO\r\n")


def case(name: str, section: str, steps: list[dict[str, Any]], files: dict[str, Any] | None = None,
         config: dict[str, Any] | None = None) -> None:  # fmt: skip
    c: dict[str, Any] = {"name": name, "section": section}
    if config:
        c["config"] = config
    if files:
        c["files"] = files
    c["steps"] = steps
    assert name not in {x["name"] for x in CASES}, name
    CASES.append(c)


def call(tool: str, args: dict[str, Any] | None = None, expect: Any = None,
         output: Any = None) -> dict[str, Any]:  # fmt: skip
    step: dict[str, Any] = {"call": tool, "args": args or {}}
    if output is not None:
        step["output"] = output
    if expect is not None:
        step["expect"] = expect
    return step


def read(path: str, expect: Any = None, **more: Any) -> dict[str, Any]:
    return call("read", {"path": path, **more}, expect)


def out(tool: str, output: Any, expect: Any = None, args: dict[str, Any] | None = None) -> dict:
    return call(tool, args or {}, expect, output)


def compact(summary: str, expect: Any = None) -> dict[str, Any]:
    step: dict[str, Any] = {"compact": summary}
    if expect is not None:
        step["expect"] = expect
    return step


def files(**changes: Any) -> dict[str, Any]:
    return {"files": changes}


def table(*rows: str) -> str:
    return "\n".join(
        [
            "## Files read before this summary",
            "",
            "Read a file again for its content; recall shows a result by its id.",
            "",
            "| Path | Lines | sha | Result |",
            "|---|---|---|---|",
            *rows,
        ]
    )


ABC = "a\nb\nc\n"
TEN = "".join(f"line {i}\n" for i in range(1, 11))
TEN_LINES = [f"line {i}" for i in range(1, 11)]

# ---------------------------------------------------------------- §1 Every result has an id

S1 = "§1"
case(
    "generic_result_is_bracket_newline_output",
    "decision 5",
    [out("fetch", "hello", "[#1000]\nhello")],
)
case("ids_are_sequential_across_tools", S1, [
    out("fetch", "a", "[#1000]\na"),
    out("bash", "b", "[#1001]\nb"),
    out("mcp_thing", "c", "[#1002]\nc"),
])  # fmt: skip
case("ids_are_lowercase_hex", S1, [
    out("t", "x", "[#1009]\nx"),
    out("t", "y", "[#100a]\ny"),
    out("t", "z", "[#100b]\nz"),
], config={"ids.first": "1009"})  # fmt: skip
case("ids_grow_past_ffff_to_five_digits", S1, [
    out("t", "x", "[#fffe]\nx"),
    out("t", "y", "[#ffff]\ny"),
    out("t", "z", "[#10000]\nz"),
    call("recall", {"id": "10000"}, "[#10001 recall #10000 lines 1-1 of 1]\nz"),
], config={"ids.first": "fffe"})  # fmt: skip
case("ids_digits_override_pads_to_six", S1, [
    out("t", "x", "[#001000]\nx"),
    out("t", "y", "[#001001]\ny"),
], config={"ids.digits": 6})  # fmt: skip
case("ids_digits_is_a_minimum_not_a_maximum", S1, [
    out("t", "x", "[#ff]\nx"),
    out("t", "y", "[#100]\ny"),
], config={"ids.digits": 2, "ids.first": "ff"})  # fmt: skip
case("ids_first_default_is_1000", "decision 1", [out("t", "", "[#1000]")])
case("error_takes_an_id", "decision 10", [
    read("missing.txt", "[#1000] There is no file missing.txt in the workspace."),
    out("t", "x", "[#1001]\nx"),
])  # fmt: skip
case("stub_takes_an_id", "decision 1", [
    read("a.txt", f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
    read("a.txt", f"[#1001 a.txt lines 1-3 of 3 sha {sha(ABC)}] Unchanged since #1000, which "
         "already shows lines 1-3."),
    out("t", "x", "[#1002]\nx"),
], files={"a.txt": ABC})  # fmt: skip
case("recall_takes_an_id", "decision 1", [
    out("t", "x", "[#1000]\nx"),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-1 of 1]\nx"),
    out("t", "y", "[#1002]\ny"),
])  # fmt: skip
case("ids_not_reused_after_compaction", S1, [
    out("t", "x", "[#1000]\nx"),
    out("t", "y", "[#1001]\ny"),
    compact("Did x and y.", "Did x and y."),
    out("t", "z", "[#1002]\nz"),
])  # fmt: skip
case("read_bracket_has_path_lines_length_sha", S1, [
    read("a.txt", f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
], files={"a.txt": ABC})  # fmt: skip
case("read_bracket_shows_path_as_given", S1, [
    read("./src/../src/app.ts", f"[#1000 ./src/../src/app.ts lines 1-3 of 3 sha {sha(ABC)}]\n"
         "1: a\n2: b\n3: c"),
], files={"src/app.ts": ABC})  # fmt: skip
case("read_one_line_range_is_a_range", "decision 3", [
    read("a.txt", f"[#1000 a.txt lines 7-7 of 10 sha {sha(TEN)}]\n7: line 7", offset=7, limit=1),
], files={"a.txt": TEN})  # fmt: skip
case("read_empty_file_form", S1, [
    read("notes.txt", f"[#1000 notes.txt empty sha {EMPTY_SHA}]"),
], files={"notes.txt": ""})  # fmt: skip
case("read_empty_file_twice_is_never_a_stub", S1, [
    read("notes.txt", f"[#1000 notes.txt empty sha {EMPTY_SHA}]"),
    read("notes.txt", f"[#1001 notes.txt empty sha {EMPTY_SHA}]"),
], files={"notes.txt": ""})  # fmt: skip
case("read_sha_is_of_the_file_bytes_with_crlf", "decision 2", [
    read("w.txt", f"[#1000 w.txt lines 1-2 of 2 sha {H1}]\n1: one\n2: two"),
], files={"w.txt": "one\r\ntwo\r\n"})  # fmt: skip
case("read_last_line_without_newline_counts", "decision 2", [
    read("a.txt", f"[#1000 a.txt lines 1-2 of 2 sha {H2}]\n1: a\n2: b"),
], files={"a.txt": "a\nb"})  # fmt: skip
case("read_final_newline_starts_no_line", "decision 2", [
    read("a.txt", f"[#1000 a.txt lines 1-2 of 2 sha {H3}]\n1: a\n2: b"),
], files={"a.txt": "a\nb\n"})  # fmt: skip
case("read_blank_lines_are_lines", "decision 2", [
    read("a.txt", f"[#1000 a.txt lines 1-4 of 4 sha {H4}]\n1: a\n2: \n3: b\n4: "),
], files={"a.txt": "a\n\nb\n\n"})  # fmt: skip
case("read_only_newline_is_one_blank_line", "decision 2", [
    read("a.txt", f"[#1000 a.txt lines 1-1 of 1 sha {sha(chr(10))}]\n1: "),
], files={"a.txt": "\n"})  # fmt: skip
case("read_offset_and_limit", "decision 3", [
    read("a.txt", f"[#1000 a.txt lines 4-6 of 10 sha {sha(TEN)}]\n" + numbered(TEN_LINES[3:6], 4),
         offset=4, limit=3),
], files={"a.txt": TEN})  # fmt: skip
case("read_limit_past_end_stops_at_last_line", "decision 3", [
    read("a.txt", f"[#1000 a.txt lines 9-10 of 10 sha {sha(TEN)}]\n9: line 9\n10: line 10",
         offset=9, limit=50),
], files={"a.txt": TEN})  # fmt: skip
case("read_window_is_the_default_limit", "decision 3", [
    read("a.txt", f"[#1000 a.txt lines 1-3 of 10 sha {sha(TEN)}]\n" + numbered(TEN_LINES[:3])),
], files={"a.txt": TEN}, config={"window.lines": 3})  # fmt: skip
case("read_limit_is_at_most_the_window", "decision 3", [
    read("a.txt", f"[#1000 a.txt lines 2-4 of 10 sha {sha(TEN)}]\n" + numbered(TEN_LINES[1:4], 2),
         offset=2, limit=100),
], files={"a.txt": TEN}, config={"window.lines": 3})  # fmt: skip
case("read_default_window_is_2000_lines", "decision 3", [
    read("big.txt", {"starts": f"[#1000 big.txt lines 1-2000 of 2500 sha "
                     f"{sha([gen(1, 2500, 'r{n}'), ''])}]\n1: r1\n2: r2\n",
                     "ends": "\n2000: r2000", "lines": 2001}),
], files={"big.txt": [gen(1, 2500, "r{n}"), ""]})  # fmt: skip
case("read_offset_past_end_is_an_error", "decision 3", [
    read("a.txt", "[#1000] Offset 4 is past the end of a.txt, which has 3 lines.", offset=4),
    out("t", "x", "[#1001]\nx"),
], files={"a.txt": ABC})  # fmt: skip
case("read_offset_past_end_of_empty_file", "decision 3", [
    read("e.txt", "[#1000] Offset 2 is past the end of e.txt, which has 0 lines.", offset=2),
], files={"e.txt": ""})  # fmt: skip
case("read_offset_zero_is_bad_arguments", "decision 10", [
    read("a.txt", "[#1000] The call's arguments are wrong: offset must be a whole number from 1.",
         offset=0),
], files={"a.txt": ABC})  # fmt: skip
case("read_a_directory_is_an_error", "decision 10", [
    read("src", "[#1000] src is a directory, not a file."),
], files={"src/a.txt": ABC})  # fmt: skip
case("read_binary_file_form", S1, [
    read("logo.png", f"[#1000 logo.png binary sha {H5}] Binary file, 9 bytes; "
         "not shown."),
    read("logo.png", f"[#1001 logo.png binary sha {H5}] Binary file, 9 bytes; "
         "not shown."),
], files={"logo.png": "PNG\0\0data"})  # fmt: skip
case("read_non_utf8_shows_replacement_characters", S1, [
    call("bash", {"command": "printf 'caf\\xe9\\nok\\n' > latin1.txt"}, "[#1000]"),
    read("latin1.txt", f"[#1001 latin1.txt lines 1-2 of 2 sha {LATIN1}]\n"
         "1: caf\ufffd\n2: ok"),
])  # fmt: skip
case("generic_output_keeps_its_final_newline", "decision 5", [
    out("t", "a\nb\n", "[#1000]\na\nb\n"),
])  # fmt: skip
case("generic_empty_output_is_the_bracket_alone", "decision 5", [out("t", "", "[#1000]")])
case("generic_crlf_output_shows_lf", "decision 2", [
    out("t", "a\r\nb\r\n", "[#1000]\na\nb\n"),
    call("recall", {"id": "1000"}, "[#1001 recall #1000 lines 1-2 of 2]\na\nb"),
])  # fmt: skip
case("any_tool_name_can_be_inserted", "§1", [
    out("mcp__github__get_issue", '{"n": 1}', '[#1000]\n{"n": 1}'),
])  # fmt: skip

# ---------------------------------------------------------------- §2 An unchanged re-read is a stub

S2 = "§2"
T = sha(TEN)
case("reread_of_whole_file_is_a_stub", S2, [
    read("a.txt", f"[#1000 a.txt lines 1-10 of 10 sha {T}]\n" + numbered(TEN_LINES)),
    read("a.txt", f"[#1001 a.txt lines 1-10 of 10 sha {T}] Unchanged since #1000, which already "
         "shows lines 1-10."),
], files={"a.txt": TEN})  # fmt: skip
case("reread_of_lines_inside_is_a_stub_with_its_own_bracket", S2, [
    read("a.txt", f"[#1000 a.txt lines 1-10 of 10 sha {T}]\n" + numbered(TEN_LINES)),
    read("a.txt", f"[#1001 a.txt lines 3-4 of 10 sha {T}] Unchanged since #1000, which already "
         "shows lines 1-10.", offset=3, limit=2),
], files={"a.txt": TEN})  # fmt: skip
case("reread_of_same_partial_range_is_a_stub", S2, [
    read("a.txt", f"[#1000 a.txt lines 4-6 of 10 sha {T}]\n" + numbered(TEN_LINES[3:6], 4),
         offset=4, limit=3),
    read("a.txt", f"[#1001 a.txt lines 4-6 of 10 sha {T}] Unchanged since #1000, which already "
         "shows lines 4-6.", offset=4, limit=3),
], files={"a.txt": TEN})  # fmt: skip
case("reread_reaching_past_the_earlier_read_is_full", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-5 of 10 sha {T}]\n"}, limit=5),
    read("a.txt", f"[#1001 a.txt lines 4-8 of 10 sha {T}]\n" + numbered(TEN_LINES[3:8], 4),
         offset=4, limit=5),
], files={"a.txt": TEN})  # fmt: skip
case("reread_starting_before_the_earlier_read_is_full", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 5-10 of 10 sha {T}]\n"}, offset=5),
    read("a.txt", f"[#1001 a.txt lines 3-6 of 10 sha {T}]\n" + numbered(TEN_LINES[2:6], 3),
         offset=3, limit=4),
], files={"a.txt": TEN})  # fmt: skip
case("reread_inside_two_reads_together_but_not_one_is_full", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-5 of 10 sha {T}]\n"}, limit=5),
    read("a.txt", {"starts": f"[#1001 a.txt lines 6-10 of 10 sha {T}]\n"}, offset=6),
    read("a.txt", f"[#1002 a.txt lines 4-7 of 10 sha {T}]\n" + numbered(TEN_LINES[3:7], 4),
         offset=4, limit=4),
], files={"a.txt": TEN})  # fmt: skip
case("stub_points_at_the_full_read_never_at_a_stub", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-10 of 10 sha {T}]\n"}),
    read("a.txt", f"[#1001 a.txt lines 1-10 of 10 sha {T}] Unchanged since #1000, which already "
         "shows lines 1-10."),
    read("a.txt", f"[#1002 a.txt lines 2-2 of 10 sha {T}] Unchanged since #1000, which already "
         "shows lines 1-10.", offset=2, limit=1),
], files={"a.txt": TEN})  # fmt: skip
case("stub_names_the_newest_full_read_holding_the_range", "decision 8", [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-5 of 10 sha {T}]\n"}, limit=5),
    read("a.txt", {"starts": f"[#1001 a.txt lines 1-10 of 10 sha {T}]\n"}),
    read("a.txt", f"[#1002 a.txt lines 2-3 of 10 sha {T}] Unchanged since #1001, which already "
         "shows lines 1-10.", offset=2, limit=2),
], files={"a.txt": TEN})  # fmt: skip
case("file_changed_outside_is_read_in_full", S2, [
    read("a.txt", f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
    files(**{"a.txt": "a\nB\nc\n"}),
    read("a.txt", f"[#1001 a.txt lines 1-3 of 3 sha {H6}]\n1: a\n2: B\n3: c"),
], files={"a.txt": ABC})  # fmt: skip
case("file_changed_by_own_edit_is_read_in_full", S2, [
    read("a.txt", f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
    call("edit", {"path": "a.txt", "old_string": "b", "new_string": "B"},
         f"[#1001 a.txt sha {H6}]\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"),
    read("a.txt", f"[#1002 a.txt lines 1-3 of 3 sha {H6}]\n1: a\n2: B\n3: c"),
], files={"a.txt": ABC})  # fmt: skip
case("file_touched_outside_but_same_bytes_is_a_stub", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n"}),
    files(**{"a.txt": ABC}),
    read("a.txt", f"[#1001 a.txt lines 1-3 of 3 sha {sha(ABC)}] Unchanged since #1000, which "
         "already shows lines 1-3."),
], files={"a.txt": ABC})  # fmt: skip
case("content_restored_matches_the_earlier_full_read", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n"}),
    files(**{"a.txt": "x\n"}),
    read("a.txt", f"[#1001 a.txt lines 1-1 of 1 sha {sha('x' + chr(10))}]\n1: x"),
    files(**{"a.txt": ABC}),
    read("a.txt", f"[#1002 a.txt lines 1-3 of 3 sha {sha(ABC)}] Unchanged since #1000, which "
         "already shows lines 1-3."),
], files={"a.txt": ABC})  # fmt: skip
case("stub_after_compaction_is_a_full_read", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n"}),
    compact("Read a.txt."),
    read("a.txt", f"[#1001 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
    read("a.txt", f"[#1002 a.txt lines 1-3 of 3 sha {sha(ABC)}] Unchanged since #1001, which "
         "already shows lines 1-3."),
], files={"a.txt": ABC})  # fmt: skip
# Another content whose hash starts with the same hex digit as ABC's: shown alike with
# sha_digits 1, told apart by the full hash.
TWIN = next(f"v{i}\n" for i in range(1000) if sha(f"v{i}\n")[0] == sha(ABC)[0])
case("only_the_full_hash_decides_unchanged", S1, [
    read("a.txt", f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)[0]}]\n1: a\n2: b\n3: c"),
    files(**{"a.txt": TWIN}),
    read("a.txt", f"[#1001 a.txt lines 1-1 of 1 sha {sha(ABC)[0]}]\n1: {TWIN.strip()}"),
], files={"a.txt": ABC}, config={"sha_digits": 1})  # fmt: skip
case("same_path_spelled_differently_is_a_stub", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n"}),
    read("./a.txt", f"[#1001 ./a.txt lines 1-3 of 3 sha {sha(ABC)}] Unchanged since #1000, which "
         "already shows lines 1-3."),
], files={"a.txt": ABC})  # fmt: skip
case("other_file_with_same_content_is_full", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n"}),
    read("b.txt", f"[#1001 b.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
], files={"a.txt": ABC, "b.txt": ABC})  # fmt: skip
case("crlf_file_reread_is_a_stub", S2, [
    read("w.txt", {"starts": f"[#1000 w.txt lines 1-2 of 2 sha {H7}]\n1: x\n"}),
    read("w.txt", f"[#1001 w.txt lines 2-2 of 2 sha {H7}] Unchanged since #1000, "
         "which already shows lines 1-2.", offset=2),
], files={"w.txt": "x\r\ny\r\n"})  # fmt: skip
case("stub_stores_the_lines_it_stands_for", "§1", [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-10 of 10 sha {T}]\n"}),
    read("a.txt", {"ends": "Unchanged since #1000, which already shows lines 1-10."},
         offset=3, limit=2),
    call("recall", {"id": "#1001"}, "[#1002 recall #1001 lines 1-2 of 2]\n3: line 3\n4: line 4"),
], files={"a.txt": TEN})  # fmt: skip
case("deleted_file_reread_is_an_error", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n"}),
    files(**{"a.txt": None}),
    read("a.txt", "[#1001] There is no file a.txt in the workspace."),
], files={"a.txt": ABC})  # fmt: skip
case("reread_of_a_shorter_window_after_growth_is_full", S2, [
    read("a.txt", {"starts": f"[#1000 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n"}),
    files(**{"a.txt": ABC + "d\n"}),
    read("a.txt", f"[#1001 a.txt lines 1-3 of 4 sha {sha(ABC + 'd' + chr(10))}]\n1: a\n2: b\n3: c",
         limit=3),
], files={"a.txt": ABC})  # fmt: skip

# ---------------------------------------------------------------- §3 Large output is capped

S3 = "§3"
case("cap_400_lines_is_not_capped", S3, [
    out("t", gen(1, 400, "line {n}"), ["[#1000]", gen(1, 400, "line {n}")]),
])  # fmt: skip
case("cap_401_lines_keeps_head_200_and_tail_100", S3, [
    out("t", gen(1, 401, "L{n}"), ["[#1000]", gen(1, 200, "L{n}"),
        "[101 lines elided, full output #1000]", gen(302, 401, "L{n}")]),
])  # fmt: skip
case("cap_401_lines_with_final_newline", S3, [
    out("t", [gen(1, 401, "L{n}"), ""], ["[#1000]", gen(1, 200, "L{n}"),
        "[101 lines elided, full output #1000]", gen(302, 401, "L{n}")]),
])  # fmt: skip
case("cap_40000_chars_is_not_capped", S3, [
    out("t", rep("x", 40000), ["[#1000]", rep("x", 40000)]),
])  # fmt: skip
case("cap_40001_chars_single_line_is_cut_with_zero_elided", S3, [
    out("t", rep("x", 40001),
        "[#1000]\n" + "x" * 20000 + " […cut]\n[0 lines elided, full output #1000]"),
])  # fmt: skip
case("cap_single_50000_char_line_is_cut_with_zero_elided", S3, [
    out("t", rep("y", 50000),
        "[#1000]\n" + "y" * 20000 + " […cut]\n[0 lines elided, full output #1000]"),
    call("recall", {"id": "1000"}, ["[#1001 recall #1000 lines 1-1 of 1]", rep("y", 50000)]),
])  # fmt: skip
case("cap_40000_chars_over_lines_is_not_capped", S3, [
    # 10 lines of 3999 characters and 9 newlines: 39,999; plus a final newline: 40,000.
    out("t", [gen(1, 10, "z" * 3999), ""], ["[#1000]", gen(1, 10, "z" * 3999), ""]),
])  # fmt: skip
case("cap_40001_chars_over_lines_is_capped", "decision 4", [
    # 10 lines of 4000 and 9 newlines: 40,009 characters; head 4 lines (16,003), 5 would be 20,004;
    # tail 2 lines (8,001), 3 would be 12,002; 4 elided.
    out("t", gen(1, 10, "z" * 4000), ["[#1000]", gen(1, 4, "z" * 4000),
        "[4 lines elided, full output #1000]", gen(1, 2, "z" * 4000)]),
])  # fmt: skip
case("cap_head_chars_exact_fit_counts_newlines", "decision 4", [
    # 3 lines of 6666 and 2 newlines are exactly 20,000; 73 lines of 136 and 72 newlines exactly 10,000.
    out("t", [gen(1, 4, "a" * 6666), gen(1, 100, "b" * 136)],
        ["[#1000]", gen(1, 3, "a" * 6666), "[28 lines elided, full output #1000]",
         gen(1, 73, "b" * 136)]),
])  # fmt: skip
case("cap_head_chars_one_over_drops_a_line", "decision 4", [
    # 3 lines of 6667 and 2 newlines are 20,003: only 2 fit; 73 lines of 137 are 10,073: 72 fit.
    out("t", [gen(1, 4, "a" * 6667), gen(1, 100, "b" * 137)],
        ["[#1000]", gen(1, 2, "a" * 6667), "[30 lines elided, full output #1000]",
         gen(1, 72, "b" * 137)]),
])  # fmt: skip
case("cap_elision_line_names_the_results_own_id", S3, [
    out("t", "x", "[#abcd]\nx"),
    out("t", gen(1, 500, "{n}"), ["[#abce]", gen(1, 200, "{n}"),
        "[200 lines elided, full output #abce]", gen(401, 500, "{n}")]),
], config={"ids.first": "abcd"})  # fmt: skip
case("cap_cut_first_line_then_tail_with_zero_elided", S3, [
    out("t", [rep("q", 50000), "end 1", "end 2"],
        "[#1000]\n" + "q" * 20000 + " […cut]\n[0 lines elided, full output #1000]\nend 1\nend 2"),
])  # fmt: skip
case("cap_first_line_of_exactly_head_chars_is_not_cut", S3, [
    out("t", [rep("a", 20000), rep("b", 20001)],
        ["[#1000]", rep("a", 20000), "[1 lines elided, full output #1000]"]),
])  # fmt: skip
case("cap_first_line_one_over_head_chars_is_cut", S3, [
    out("t", [rep("a", 20001), rep("b", 20000)],
        "[#1000]\n" + "a" * 20000 + " […cut]\n[1 lines elided, full output #1000]"),
])  # fmt: skip
case("cap_tail_stops_at_a_line_too_long", S3, [
    out("t", [gen(1, 450, "s{n}"), rep("w", 10001), "last"],
        ["[#1000]", gen(1, 200, "s{n}"), "[251 lines elided, full output #1000]", "last"]),
])  # fmt: skip
case("cap_tail_line_of_exactly_tail_chars_is_kept", S3, [
    out("t", [gen(1, 450, "s{n}"), rep("w", 10000)],
        ["[#1000]", gen(1, 200, "s{n}"), "[250 lines elided, full output #1000]",
         rep("w", 10000)]),
])  # fmt: skip
case("cap_many_short_lines", S3, [
    out("t", gen(1, 1000, "{n}"), {"starts": ["[#1000]", gen(1, 200, "{n}"),
        "[700 lines elided, full output #1000]", "901"], "ends": "\n1000", "lines": 302}),
])  # fmt: skip
case("cap_crlf_output_shows_lf", S3, [
    out("t", [gen(1, 401, "c{n}\r"), ""], ["[#1000]", gen(1, 200, "c{n}"),
        "[101 lines elided, full output #1000]", gen(302, 401, "c{n}")]),
])  # fmt: skip
case("capped_output_is_stored_in_full", "§1", [
    out("t", gen(1, 401, "L{n}"), {"contains": ["[101 lines elided, full output #1000]"]}),
    call("recall", {"id": "#1000"}, ["[#1001 recall #1000 lines 1-401 of 401]",
                                      gen(1, 401, "L{n}")]),
])  # fmt: skip
case("cap_numbers_from_config", "decision 12", [
    out("t", gen(1, 5, "a{n}"), ["[#1000]", gen(1, 5, "a{n}")]),
    out("t", gen(1, 6, "a{n}"), "[#1001]\na1\na2\n[3 lines elided, full output #1001]\na6"),
], config={"cap.max_lines": 5, "cap.head_lines": 2, "cap.tail_lines": 1})  # fmt: skip
case("cap_chars_from_config", "decision 12", [
    out("t", "abcdefghij\nklm", "[#1000]\nabcd […cut]\n[0 lines elided, full output #1000]\nklm"),
], config={"cap.max_chars": 10, "cap.head_chars": 4, "cap.tail_chars": 3})  # fmt: skip
case("read_is_not_capped", S3, [
    read("big.txt", {"starts": "[#1000 big.txt lines 1-500 of 500 sha", "ends": "\n500: r500",
                     "lines": 501}),
], files={"big.txt": [gen(1, 500, "r{n}"), ""]})  # fmt: skip
case("read_of_a_long_line_is_not_cut", S3, [
    read("one.txt", f"[#1000 one.txt lines 1-1 of 1 sha {sha(rep('k', 50000))}]\n1: " + "k" * 50000),
], files={"one.txt": rep("k", 50000)})  # fmt: skip
case("recall_is_not_capped", S3, [
    out("t", gen(1, 1000, "m{n}"), {"lines": 302}),
    call("recall", {"id": "1000"}, ["[#1001 recall #1000 lines 1-1000 of 1000]",
                                     gen(1, 1000, "m{n}")]),
])  # fmt: skip
case("bash_output_is_capped", S3, [
    call("bash", {"command": "seq 1 1000"}, {"starts": ["[#1000]", gen(1, 200, "{n}"),
         "[700 lines elided, full output #1000]", "901"], "ends": "\n1000", "lines": 302}),
])  # fmt: skip

# ---------------------------------------------------------------- §4 recall

S4 = "§4"
case("recall_with_hash", S4, [
    out("t", "a\nb\nc", "[#1000]\na\nb\nc"),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-3 of 3]\na\nb\nc"),
])  # fmt: skip
case("recall_without_hash", S4, [
    out("t", "a\nb\nc"),
    call("recall", {"id": "1000"}, "[#1001 recall #1000 lines 1-3 of 3]\na\nb\nc"),
])  # fmt: skip
case("recall_offset_and_limit", "decision 6", [
    out("t", "a\nb\nc"),
    call("recall", {"id": "#1000", "offset": 2, "limit": 1}, "[#1001 recall #1000 lines 2-2 of 3]\nb"),
])  # fmt: skip
case("recall_limit_past_end", "decision 6", [
    out("t", "a\nb\nc"),
    call("recall", {"id": "#1000", "offset": 2, "limit": 100},
         "[#1001 recall #1000 lines 2-3 of 3]\nb\nc"),
])  # fmt: skip
case("recall_window_of_2000_lines", "decision 6", [
    out("t", gen(1, 3400, "v{n}")),
    call("recall", {"id": "#1000"}, ["[#1001 recall #1000 lines 1-2000 of 3400]",
                                      gen(1, 2000, "v{n}")]),
    call("recall", {"id": "#1000", "offset": 2001}, ["[#1002 recall #1000 lines 2001-3400 of 3400]",
                                                     gen(2001, 3400, "v{n}")]),
    call("recall", {"id": "#1000", "limit": 5000}, {"starts": "[#1003 recall #1000 lines 1-2000 of 3400]"}),
])  # fmt: skip
case("recall_window_from_config", "decision 12", [
    out("t", "a\nb\nc"),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-2 of 3]\na\nb"),
], config={"window.lines": 2})  # fmt: skip
case("recall_unknown_id", S4, [
    out("t", "x"),
    call("recall", {"id": "#ffff"}, "[#1001] No stored result #ffff in this session."),
])  # fmt: skip
case("recall_unknown_id_without_hash", S4, [
    call("recall", {"id": "ffff"}, "[#1000] No stored result #ffff in this session."),
])  # fmt: skip
case("recall_id_not_given_yet", S4, [
    out("t", "x"),
    call("recall", {"id": "#1005"}, "[#1001] No stored result #1005 in this session."),
])  # fmt: skip
case("recall_of_itself_is_unknown", S4, [
    call("recall", {"id": "#1000"}, "[#1000] No stored result #1000 in this session."),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-1 of 1]\n"
         "No stored result #1000 in this session."),
])  # fmt: skip
case("recall_of_a_recall", S4, [
    out("t", "a\nb\nc"),
    call("recall", {"id": "#1000", "offset": 2}, "[#1001 recall #1000 lines 2-3 of 3]\nb\nc"),
    call("recall", {"id": "#1001"}, "[#1002 recall #1001 lines 1-2 of 2]\nb\nc"),
])  # fmt: skip
case("recall_twice_is_never_deduplicated", S4, [
    out("t", "a"),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-1 of 1]\na"),
    call("recall", {"id": "#1000"}, "[#1002 recall #1000 lines 1-1 of 1]\na"),
])  # fmt: skip
case("recall_after_compaction_still_works", S4, [
    out("t", "kept"),
    compact("Summary."),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-1 of 1]\nkept"),
])  # fmt: skip
case("recall_of_a_read_gives_its_numbered_lines", S4, [
    read("a.txt", offset=2),
    call("recall", {"id": "1000"}, "[#1001 recall #1000 lines 1-2 of 2]\n2: b\n3: c"),
], files={"a.txt": ABC})  # fmt: skip
case("recall_of_an_error_gives_its_sentence", S4, [
    read("nope.txt", "[#1000] There is no file nope.txt in the workspace."),
    call("recall", {"id": "1000"}, "[#1001 recall #1000 lines 1-1 of 1]\n"
         "There is no file nope.txt in the workspace."),
])  # fmt: skip
case("recall_of_a_same_result_stub_gives_the_output", S4, [
    out("grep", "x.py:1: hit", "[#1000]\nx.py:1: hit", {"pattern": "hit"}),
    out("grep", "x.py:1: hit", "[#1001] Same result as #1000.", {"pattern": "hit"}),
    call("recall", {"id": "#1001"}, "[#1002 recall #1001 lines 1-1 of 1]\nx.py:1: hit"),
])  # fmt: skip
case("recall_offset_past_end_is_an_error", S4, [
    out("t", "a\nb\nc"),
    call("recall", {"id": "#1000", "offset": 4},
         "[#1001] Offset 4 is past the end of #1000, which has 3 lines."),
])  # fmt: skip
case("recall_of_an_empty_result", S4, [
    out("t", ""),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 empty]"),
])  # fmt: skip
case("recall_of_a_crlf_output_shows_lf", S4, [
    out("t", "one\r\ntwo\r\n"),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-2 of 2]\none\ntwo"),
])  # fmt: skip

# ---------------------------------------------------------------- §5 Edits answer with the diff

S5 = "§5"
TEN_5 = TEN.replace("line 5\n", "five\n")
case("edit_answers_with_the_diff", S5, [
    call("edit", {"path": "a.txt", "old_string": "line 5\n", "new_string": "five\n"},
         f"[#1000 a.txt sha {sha(TEN_5)}]\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n"
         "+five\n line 6\n line 7\n line 8"),
], files={"a.txt": TEN})  # fmt: skip
case("edit_near_the_start_has_a_short_hunk", S5, [
    call("edit", {"path": "a.txt", "old_string": "line 1\n", "new_string": "one\n"},
         f"[#1000 a.txt sha {sha(TEN.replace('line 1' + chr(10), 'one' + chr(10), 1))}]\n"
         "@@ -1,4 +1,4 @@\n-line 1\n+one\n line 2\n line 3\n line 4"),
], files={"a.txt": TEN})  # fmt: skip
case("edit_inserting_lines_changes_the_counts", S5, [
    call("edit", {"path": "a.txt", "old_string": "b\n", "new_string": "b\nb2\nb3\n"},
         f"[#1000 a.txt sha {H8}]\n@@ -1,3 +1,5 @@\n a\n b\n+b2\n+b3\n c"),
], files={"a.txt": ABC})  # fmt: skip
TWENTY = "".join(f"t{i}\n" for i in range(1, 21))
TWENTY_2 = TWENTY.replace("t2\n", "T2\n").replace("t19\n", "T19\n")
case("multiedit_two_distant_changes_make_two_hunks", S5, [
    call("multiedit", {"path": "t.txt", "edits": [
        {"old_string": "t2\n", "new_string": "T2\n"},
        {"old_string": "t19\n", "new_string": "T19\n"}]},
         f"[#1000 t.txt sha {sha(TWENTY_2)}]\n@@ -1,5 +1,5 @@\n t1\n-t2\n+T2\n t3\n t4\n t5\n"
         "@@ -16,5 +16,5 @@\n t16\n t17\n t18\n-t19\n+T19\n t20"),
], files={"t.txt": TWENTY})  # fmt: skip
TWENTY_NEAR = TWENTY.replace("t5\n", "T5\n").replace("t11\n", "T11\n")
case("changes_six_lines_apart_share_one_hunk", "decision 7", [
    call("multiedit", {"path": "t.txt", "edits": [
        {"old_string": "t5\n", "new_string": "T5\n"},
        {"old_string": "t11\n", "new_string": "T11\n"}]},
         f"[#1000 t.txt sha {sha(TWENTY_NEAR)}]\n@@ -2,13 +2,13 @@\n t2\n t3\n t4\n-t5\n+T5\n"
         " t6\n t7\n t8\n t9\n t10\n-t11\n+T11\n t12\n t13\n t14"),
], files={"t.txt": TWENTY})  # fmt: skip
case("diff_marks_a_missing_final_newline", "decision 7", [
    call("edit", {"path": "a.txt", "old_string": "b", "new_string": "c"},
         f"[#1000 a.txt sha {sha('a' + chr(10) + 'c')}]\n@@ -1,2 +1,2 @@\n a\n-b\n"
         "\\ No newline at end of file\n+c\n\\ No newline at end of file"),
], files={"a.txt": "a\nb"})  # fmt: skip
case("diff_of_adding_a_final_newline", "decision 7", [
    call("write", {"path": "a.txt", "content": "a\nb\n"},
         f"[#1000 a.txt sha {sha('a' + chr(10) + 'b' + chr(10))}]\n@@ -1,2 +1,2 @@\n a\n-b\n"
         "\\ No newline at end of file\n+b"),
], files={"a.txt": "a\nb"})  # fmt: skip
case("edit_replace_all", S5, [
    call("edit", {"path": "a.txt", "old_string": "x", "new_string": "y", "replace_all": True},
         f"[#1000 a.txt sha {sha('y' + chr(10) + 'y' + chr(10))}]\n@@ -1,2 +1,2 @@\n-x\n-x\n+y\n+y"),
], files={"a.txt": "x\nx\n"})  # fmt: skip
case("edit_old_string_not_found", "decision 10", [
    call("edit", {"path": "a.txt", "old_string": "zzz", "new_string": "y"},
         "[#1000] old_string was not found in a.txt."),
], files={"a.txt": ABC})  # fmt: skip
case("edit_old_string_not_unique", "decision 10", [
    call("edit", {"path": "a.txt", "old_string": "x", "new_string": "y"},
         "[#1000] old_string occurs 2 times in a.txt; give more context or set replace_all."),
    read("a.txt", f"[#1001 a.txt lines 1-2 of 2 sha {sha('x' + chr(10) + 'x' + chr(10))}]\n1: x\n2: x"),
], files={"a.txt": "x\nx\n"})  # fmt: skip
case("edit_same_strings_is_an_error", "decision 10", [
    call("edit", {"path": "a.txt", "old_string": "a", "new_string": "a"},
         "[#1000] old_string and new_string are the same; there is nothing to change."),
], files={"a.txt": ABC})  # fmt: skip
case("edit_of_a_missing_file", "decision 10", [
    call("edit", {"path": "nope.txt", "old_string": "a", "new_string": "b"},
         "[#1000] There is no file nope.txt in the workspace."),
])  # fmt: skip
case("edit_outside_the_workspace", "decision 11", [
    call("edit", {"path": "../x.txt", "old_string": "a", "new_string": "b"},
         "[#1000] ../x.txt is outside the workspace."),
])  # fmt: skip
case("edit_of_non_utf8_file_is_refused", "decision 10", [
    call("bash", {"command": "printf 'caf\\xe9\\n' > l.txt"}, "[#1000]"),
    call("edit", {"path": "l.txt", "old_string": "caf", "new_string": "cafe"},
         "[#1001] l.txt is not UTF-8 text, so it cannot be edited."),
])  # fmt: skip
case("edit_of_crlf_file_keeps_crlf_and_shows_lf", S5, [
    call("edit", {"path": "w.txt", "old_string": "two", "new_string": "TWO"},
         f"[#1000 w.txt sha {H9}]\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO"),
    read("w.txt", f"[#1001 w.txt lines 1-2 of 2 sha {H9}]\n1: one\n2: TWO"),
], files={"w.txt": "one\r\ntwo\r\n"})  # fmt: skip
case("edit_across_lines_of_a_crlf_file", S5, [
    call("edit", {"path": "w.txt", "old_string": "one\ntwo", "new_string": "one\nTWO"},
         f"[#1000 w.txt sha {H9}]\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO"),
], files={"w.txt": "one\r\ntwo\r\n"})  # fmt: skip
case("multiedit_applies_edits_in_order", "decision 7", [
    call("multiedit", {"path": "a.txt", "edits": [
        {"old_string": "a", "new_string": "A"},
        {"old_string": "A\nb", "new_string": "AB"}]},
         f"[#1000 a.txt sha {sha('AB' + chr(10) + 'c' + chr(10))}]\n@@ -1,3 +1,2 @@\n-a\n-b\n+AB\n c"),
], files={"a.txt": ABC})  # fmt: skip
case("multiedit_is_all_or_nothing", "decision 7", [
    call("multiedit", {"path": "a.txt", "edits": [
        {"old_string": "a", "new_string": "A"},
        {"old_string": "zzz", "new_string": "y"}]},
         "[#1000] old_string was not found in a.txt."),
    read("a.txt", f"[#1001 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
], files={"a.txt": ABC})  # fmt: skip
FOURTEEN = "".join(f"l{i}\n" for i in range(1, 15))
case("write_new_file_is_created_with_its_line_count", S5, [
    call("write", {"path": "docs/new.md", "content": FOURTEEN},
         f"[#1000 docs/new.md sha {sha(FOURTEEN)}] Created, 14 lines."),
    read("docs/new.md", {"starts": f"[#1001 docs/new.md lines 1-14 of 14 sha {sha(FOURTEEN)}]\n1: l1\n"}),
])  # fmt: skip
case("write_new_file_of_one_line", S5, [
    call("write", {"path": "one.txt", "content": "hi\n"},
         f"[#1000 one.txt sha {sha('hi' + chr(10))}] Created, 1 line."),
])  # fmt: skip
case("write_new_empty_file", S5, [
    call("write", {"path": "e.txt", "content": ""}, f"[#1000 e.txt sha {EMPTY_SHA}] Created, 0 lines."),
    read("e.txt", f"[#1001 e.txt empty sha {EMPTY_SHA}]"),
])  # fmt: skip
case("write_over_existing_file_answers_with_the_diff", S5, [
    call("write", {"path": "a.txt", "content": "a\nB\nc\n"},
         f"[#1000 a.txt sha {sha('a' + chr(10) + 'B' + chr(10) + 'c' + chr(10))}]\n"
         "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"),
], files={"a.txt": ABC})  # fmt: skip
case("write_same_content_is_no_change", S5, [
    call("write", {"path": "a.txt", "content": ABC}, f"[#1000 a.txt sha {sha(ABC)}] No change."),
], files={"a.txt": ABC})  # fmt: skip
case("write_empties_a_file", S5, [
    call("write", {"path": "a.txt", "content": ""},
         f"[#1000 a.txt sha {EMPTY_SHA}]\n@@ -1,3 +0,0 @@\n-a\n-b\n-c"),
], files={"a.txt": ABC})  # fmt: skip
case("write_into_an_empty_file", S5, [
    call("write", {"path": "e.txt", "content": "x\n"},
         f"[#1000 e.txt sha {sha('x' + chr(10))}]\n@@ -0,0 +1 @@\n+x"),
], files={"e.txt": ""})  # fmt: skip
case("write_outside_the_workspace", "decision 11", [
    call("write", {"path": "/tmp/ctxview-conformance-escape.txt", "content": "x"},
         "[#1000] /tmp/ctxview-conformance-escape.txt is outside the workspace."),
])  # fmt: skip
BIG_OLD = [gen(1, 1000, "old {n}"), ""]
BIG_NEW = expand([gen(1, 1000, "new {n}"), ""])
case("edit_diff_is_capped_and_keeps_the_bracket", S5, [
    call("write", {"path": "big.txt", "content": BIG_NEW},
         [f"[#1000 big.txt sha {sha(BIG_NEW)}]", "@@ -1,1000 +1,1000 @@", gen(1, 199, "-old {n}"),
          "[1701 lines elided, full output #1000]", gen(901, 1000, "+new {n}")]),
    call("recall", {"id": "#1000", "offset": 1, "limit": 2},
         "[#1001 recall #1000 lines 1-2 of 2001]\n@@ -1,1000 +1,1000 @@\n-old 1"),
], files={"big.txt": BIG_OLD})  # fmt: skip
case("edit_stores_its_diff", "§1", [
    call("edit", {"path": "a.txt", "old_string": "b", "new_string": "B"}),
    call("recall", {"id": "#1000"}, "[#1001 recall #1000 lines 1-5 of 5]\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"),
], files={"a.txt": ABC})  # fmt: skip
case("edit_of_file_changed_outside_adds_a_note_after_the_diff", S5, [
    read("a.txt", {"starts": "[#1000 a.txt lines 1-3 of 3"}),
    files(**{"a.txt": "a\nb\nc\nd\n"}),
    call("edit", {"path": "a.txt", "old_string": "d", "new_string": "D"},
         f"[#1001 a.txt sha {sha('a' + chr(10) + 'b' + chr(10) + 'c' + chr(10) + 'D' + chr(10))}]\n"
         "@@ -1,4 +1,4 @@\n a\n b\n c\n-d\n+D\nNote: a.txt changed outside this session since #1000."),
], files={"a.txt": ABC})  # fmt: skip
case("edit_after_own_edit_has_no_note", S5, [
    read("a.txt", {"starts": "[#1000 a.txt lines 1-3 of 3"}),
    call("edit", {"path": "a.txt", "old_string": "a", "new_string": "A"}, {"lines": 6}),
    call("edit", {"path": "a.txt", "old_string": "c", "new_string": "C"},
         f"[#1002 a.txt sha {sha('A' + chr(10) + 'b' + chr(10) + 'C' + chr(10))}]\n"
         "@@ -1,3 +1,3 @@\n A\n b\n-c\n+C"),
], files={"a.txt": ABC})  # fmt: skip
case("edit_of_a_directory_is_an_error", "decision 10", [
    call("write", {"path": "src", "content": "x"}, "[#1000] src is a directory, not a file."),
], files={"src/a.txt": "a"})  # fmt: skip

PATCH_UPDATE = "*** Begin Patch\n*** Update File: a.txt\n@@\n a\n-b\n+B\n c\n*** End Patch"
case("apply_patch_update_one_file", S5, [
    call("apply_patch", {"patch": PATCH_UPDATE},
         f"[#1000 a.txt sha {sha('a' + chr(10) + 'B' + chr(10) + 'c' + chr(10))}]\n"
         "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"),
], files={"a.txt": ABC})  # fmt: skip
case("apply_patch_add_one_file", S5, [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n+text\n"
                                  "*** End Patch"},
         f"[#1000 docs/new.md sha {sha('# New' + chr(10) + 'text' + chr(10))}] Created, 2 lines."),
    read("docs/new.md", f"[#1001 docs/new.md lines 1-2 of 2 sha "
         f"{sha('# New' + chr(10) + 'text' + chr(10))}]\n1: # New\n2: text"),
])  # fmt: skip
case("apply_patch_delete_one_file", S5, [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: old.md\n*** End Patch"},
         "[#1000 old.md deleted]"),
    read("old.md", "[#1001] There is no file old.md in the workspace."),
], files={"old.md": "gone\n"})  # fmt: skip
MULTI = "\n".join([
    "*** Begin Patch",
    "*** Update File: src/a.ts",
    "@@",
    " one",
    "-two",
    "+TWO",
    " three",
    "*** Add File: docs/new.md",
    "+hello",
    "+world",
    "*** Update File: c.txt",
    "*** Move to: d.txt",
    "@@",
    "-c1",
    "+C1",
    "*** Delete File: old.md",
    "*** End Patch",
])  # fmt: skip
A_NEW = "one\nTWO\nthree\n"
D_NEW = "C1\nc2\n"
case("apply_patch_several_files_in_the_patchs_order", S5, [
    call("apply_patch", {"patch": MULTI}, "\n".join([
        "[#1000]",
        f"[src/a.ts sha {sha(A_NEW)}]",
        "@@ -1,3 +1,3 @@", " one", "-two", "+TWO", " three",
        f"[docs/new.md sha {sha('hello' + chr(10) + 'world' + chr(10))}] Created, 2 lines.",
        f"[c.txt moved to d.txt sha {sha(D_NEW)}]",
        "@@ -1,2 +1,2 @@", "-c1", "+C1", " c2",
        "[old.md deleted]",
    ])),
    read("d.txt", f"[#1001 d.txt lines 1-2 of 2 sha {sha(D_NEW)}]\n1: C1\n2: c2"),
    read("c.txt", "[#1002] There is no file c.txt in the workspace."),
    read("old.md", "[#1003] There is no file old.md in the workspace."),
    read("src/a.ts", f"[#1004 src/a.ts lines 1-3 of 3 sha {sha(A_NEW)}]\n1: one\n2: TWO\n3: three"),
], files={"src/a.ts": "one\ntwo\nthree\n", "c.txt": "c1\nc2\n", "old.md": "x\n"})  # fmt: skip
BAD = "\n".join([
    "*** Begin Patch",
    "*** Add File: created.txt",
    "+new",
    "*** Delete File: keep.txt",
    "*** Update File: a.txt",
    "@@",
    "-no such line",
    "+x",
    "*** End Patch",
])  # fmt: skip
case("apply_patch_that_fails_leaves_the_workspace_as_it_was", "decision 10", [
    call("apply_patch", {"patch": BAD},
         "[#1000] The patch cannot be applied: the lines to change (from 'no such line') are not "
         "in a.txt."),
    read("created.txt", "[#1001] There is no file created.txt in the workspace."),
    read("keep.txt", f"[#1002 keep.txt lines 1-1 of 1 sha {sha('k' + chr(10))}]\n1: k"),
    read("a.txt", f"[#1003 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
], files={"a.txt": ABC, "keep.txt": "k\n"})  # fmt: skip
case("apply_patch_without_envelope_is_an_error", "decision 10", [
    call("apply_patch", {"patch": "*** Update File: a.txt\n-a\n+b"},
         "[#1000] The patch cannot be applied: it must start with '*** Begin Patch'."),
], files={"a.txt": ABC})  # fmt: skip
case("apply_patch_adding_an_existing_file_is_an_error", "decision 10", [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"},
         "[#1000] The patch cannot be applied: a.txt already exists."),
], files={"a.txt": ABC})  # fmt: skip
case("apply_patch_deleting_a_missing_file_is_an_error", "decision 10", [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: nope.md\n*** End Patch"},
         "[#1000] There is no file nope.md in the workspace."),
])  # fmt: skip
case("apply_patch_outside_the_workspace_is_an_error", "decision 11", [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Add File: ../out.txt\n+x\n*** End Patch"},
         "[#1000] ../out.txt is outside the workspace."),
])  # fmt: skip
case("apply_patch_hunk_with_end_of_file", "decision 7", [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n b\n-c\n+C\n+d\n"
                                  "*** End of File\n*** End Patch"},
         f"[#1000 a.txt sha {sha('a' + chr(10) + 'b' + chr(10) + 'C' + chr(10) + 'd' + chr(10))}]\n"
         "@@ -1,3 +1,4 @@\n a\n b\n-c\n+C\n+d"),
], files={"a.txt": ABC})  # fmt: skip
case("apply_patch_keeps_crlf_line_ends", S5, [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: w.txt\n@@\n one\n-two\n+TWO\n"
                                  "*** End Patch"},
         f"[#1000 w.txt sha {H9}]\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO"),
    read("w.txt", f"[#1001 w.txt lines 1-2 of 2 sha {H9}]\n1: one\n2: TWO"),
], files={"w.txt": "one\r\ntwo\r\n"})  # fmt: skip
case("apply_patch_then_reread_is_full", S2, [
    read("a.txt", {"starts": "[#1000 a.txt lines 1-3 of 3"}),
    call("apply_patch", {"patch": PATCH_UPDATE}, {"starts": "[#1001 a.txt sha"}),
    read("a.txt", f"[#1002 a.txt lines 1-3 of 3 sha {sha('a' + chr(10) + 'B' + chr(10) + 'c' + chr(10))}]"
         "\n1: a\n2: B\n3: c"),
], files={"a.txt": ABC})  # fmt: skip

# ---------------------------------------------------------------- §6 The same search twice

S6 = "§6"
GREP_FILES = {"src/a.py": "import os\nx = 1\n", "src/b.py": "import sys\n", "README.md": "hi\n"}
case("same_grep_twice_is_a_stub", S6, [
    call("grep", {"pattern": "import"}, "[#1000]\nsrc/a.py:1: import os\nsrc/b.py:1: import sys"),
    call("grep", {"pattern": "import"}, "[#1001] Same result as #1000."),
], files=GREP_FILES)  # fmt: skip
case("same_glob_twice_is_a_stub", S6, [
    call("glob", {"pattern": "**/*.py"}, "[#1000]\nsrc/a.py\nsrc/b.py"),
    call("glob", {"pattern": "**/*.py"}, "[#1001] Same result as #1000."),
], files=GREP_FILES)  # fmt: skip
case("same_list_twice_is_a_stub", S6, [
    call("list", {"path": "."}, "[#1000]\nREADME.md\nsrc/\nsrc/a.py\nsrc/b.py"),
    call("list", {"path": "."}, "[#1001] Same result as #1000."),
], files=GREP_FILES)  # fmt: skip
case("same_search_inserted_twice_is_a_stub", "decision 8", [
    out("search", "result one\nresult two", "[#1000]\nresult one\nresult two", {"query": "q"}),
    out("search", "result one\nresult two", "[#1001] Same result as #1000.", {"query": "q"}),
])  # fmt: skip
case("same_result_args_compared_with_sorted_keys", "decision 8", [
    out("search", "r", "[#1000]\nr", {"query": "q", "limit": 5}),
    out("search", "r", "[#1001] Same result as #1000.", {"limit": 5, "query": "q"}),
])  # fmt: skip
case("same_output_different_args_is_full", S6, [
    call("grep", {"pattern": "import"}, {"starts": "[#1000]\n"}),
    call("grep", {"pattern": "import", "path": "src"},
         "[#1001]\nsrc/a.py:1: import os\nsrc/b.py:1: import sys"),
], files=GREP_FILES)  # fmt: skip
case("same_args_changed_result_is_full", S6, [
    call("grep", {"pattern": "import"}, "[#1000]\nsrc/a.py:1: import os\nsrc/b.py:1: import sys"),
    files(**{"src/c.py": "import re\n"}),
    call("grep", {"pattern": "import"},
         "[#1001]\nsrc/a.py:1: import os\nsrc/b.py:1: import sys\nsrc/c.py:1: import re"),
    files(**{"src/c.py": None}),
    call("grep", {"pattern": "import"}, "[#1002] Same result as #1000."),
], files=GREP_FILES)  # fmt: skip
case("same_result_after_own_edit_is_full", S6, [
    call("grep", {"pattern": "x ="}, "[#1000]\nsrc/a.py:2: x = 1"),
    call("edit", {"path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}),
    call("grep", {"pattern": "x ="}, "[#1002]\nsrc/a.py:2: x = 2"),
], files=GREP_FILES)  # fmt: skip
case("same_result_stub_names_the_full_result", S6, [
    out("glob", "a\nb", "[#1000]\na\nb", {"pattern": "*"}),
    out("glob", "a\nb", "[#1001] Same result as #1000.", {"pattern": "*"}),
    out("glob", "a\nb", "[#1002] Same result as #1000.", {"pattern": "*"}),
])  # fmt: skip
case("same_result_after_compaction_is_full", S6, [
    out("grep", "hit", "[#1000]\nhit", {"pattern": "h"}),
    compact("S."),
    out("grep", "hit", "[#1001]\nhit", {"pattern": "h"}),
    out("grep", "hit", "[#1002] Same result as #1001.", {"pattern": "h"}),
])  # fmt: skip
case("same_text_from_another_tool_is_full", S6, [
    out("grep", "a.py", "[#1000]\na.py", {"pattern": "a"}),
    out("glob", "a.py", "[#1001]\na.py", {"pattern": "a"}),
])  # fmt: skip
case("bash_output_twice_is_never_a_stub", S6, [
    call("bash", {"command": "echo same"}, "[#1000]\nsame\n"),
    call("bash", {"command": "echo same"}, "[#1001]\nsame\n"),
])  # fmt: skip
case("other_tools_inserted_twice_are_never_stubs", S6, [
    out("fetch", "page", "[#1000]\npage", {"url": "u"}),
    out("fetch", "page", "[#1001]\npage", {"url": "u"}),
])  # fmt: skip
case("dedupe_by_result_from_config", "decision 12", [
    out("fetch", "page", "[#1000]\npage", {"url": "u"}),
    out("fetch", "page", "[#1001] Same result as #1000.", {"url": "u"}),
    out("grep", "hit", "[#1002]\nhit", {"pattern": "h"}),
    out("grep", "hit", "[#1003]\nhit", {"pattern": "h"}),
], config={"dedupe.by_result": ["fetch"]})  # fmt: skip
case("same_capped_result_twice_is_a_stub", S6, [
    out("grep", gen(1, 500, "f{n}.py:1: x"), {"contains": ["[200 lines elided, full output #1000]"]},
        {"pattern": "x"}),
    out("grep", gen(1, 500, "f{n}.py:1: x"), "[#1001] Same result as #1000.", {"pattern": "x"}),
])  # fmt: skip
case("empty_search_results_say_so", S6, [
    call("grep", {"pattern": "nothing-here"}, "[#1000]\nNo matches."),
    call("glob", {"pattern": "*.rs"}, "[#1001]\nNo files match."),
    call("grep", {"pattern": "nothing-here"}, "[#1002] Same result as #1000."),
], files=GREP_FILES)  # fmt: skip
case("grep_bad_regex_is_an_error", "decision 10", [
    call("grep", {"pattern": "("}, {"starts": "[#1000] The pattern is not a valid regular expression: "}),
], files=GREP_FILES)  # fmt: skip
case("list_outside_the_workspace_is_an_error", "decision 11", [
    call("list", {"path": ".."}, "[#1000] .. is outside the workspace."),
])  # fmt: skip

# ---------------------------------------------------------------- §7 Compaction

S7 = "§7"
case("compaction_without_reads_is_the_summary_alone", "decision 9", [
    out("t", "x"),
    compact("We did x.", "We did x."),
])  # fmt: skip
case("compaction_table_of_one_read", "decision 9", [
    read("src/app.ts"),
    compact("Summary.", "Summary.\n\n" + table(f"| src/app.ts | 1-3 of 3 | {sha(ABC)} | #1000 |")),
], files={"src/app.ts": ABC})  # fmt: skip
case("compaction_table_newest_read_per_path_newest_last", S7, [
    read("a.txt"),
    read("b.txt"),
    files(**{"a.txt": "a2\n"}),
    read("a.txt"),
    compact("S.", "S.\n\n" + table(f"| b.txt | 1-3 of 3 | {sha(ABC)} | #1001 |",
                                   f"| a.txt | 1-1 of 1 | {sha('a2' + chr(10))} | #1002 |")),
], files={"a.txt": ABC, "b.txt": ABC})  # fmt: skip
case("compaction_table_ignores_stubs", S7, [
    read("a.txt"),
    read("b.txt"),
    read("a.txt", {"ends": "Unchanged since #1000, which already shows lines 1-3."}),
    compact("S.", "S.\n\n" + table(f"| a.txt | 1-3 of 3 | {sha(ABC)} | #1000 |",
                                   f"| b.txt | 1-3 of 3 | {sha(ABC)} | #1001 |")),
], files={"a.txt": ABC, "b.txt": ABC})  # fmt: skip
case("compaction_table_at_most_compaction_rows", S7, [
    read("a.txt"), read("b.txt"), read("c.txt"),
    compact("S.", "S.\n\n" + table(f"| b.txt | 1-1 of 1 | {sha('b' + chr(10))} | #1001 |",
                                   f"| c.txt | 1-1 of 1 | {sha('c' + chr(10))} | #1002 |")),
], files={"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"}, config={"compaction.rows": 2})  # fmt: skip
case("compaction_table_default_50_rows", S7, [
    *[read(f"f{i:02}.txt") for i in range(1, 53)],
    compact("S.", {"starts": "S.\n\n## Files read before this summary\n", "lines": 2 + 6 + 50,
                   "contains": ["\n| f03.txt | 1-1 of 1 |"],
                   "ends": f"| f52.txt | 1-1 of 1 | {sha('52' + chr(10))} | #1033 |"}),
], files={f"f{i:02}.txt": f"{i}\n" for i in range(1, 53)})  # fmt: skip
case("compaction_table_row_of_an_empty_file", S7, [
    read("e.txt"),
    compact("S.", "S.\n\n" + table(f"| e.txt | empty | {EMPTY_SHA} | #1000 |")),
], files={"e.txt": ""})  # fmt: skip
case("compaction_table_row_of_a_partial_read", S7, [
    read("a.txt", offset=2, limit=3),
    compact("S.", "S.\n\n" + table(f"| a.txt | 2-4 of 10 | {T} | #1000 |")),
], files={"a.txt": TEN})  # fmt: skip
case("compaction_table_path_as_given", S7, [
    read("./a.txt"),
    compact("S.", "S.\n\n" + table(f"| ./a.txt | 1-3 of 3 | {sha(ABC)} | #1000 |")),
], files={"a.txt": ABC})  # fmt: skip
case("compaction_table_ignores_errors_and_binary", S7, [
    read("nope.txt"),
    read("bin.dat"),
    compact("S.", "S."),
], files={"bin.dat": "\0\0"})  # fmt: skip
case("compaction_empties_the_dedupe_table", S7, [
    read("a.txt"),
    out("grep", "hit", "[#1001]\nhit", {"pattern": "h"}),
    compact("S."),
    read("a.txt", f"[#1002 a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
    out("grep", "hit", "[#1003]\nhit", {"pattern": "h"}),
], files={"a.txt": ABC})  # fmt: skip
case("second_compaction_lists_only_reads_since_the_first", S7, [
    read("a.txt"),
    compact("One.", {"contains": ["| a.txt |"]}),
    read("b.txt"),
    compact("Two.", "Two.\n\n" + table(f"| b.txt | 1-3 of 3 | {sha(ABC)} | #1001 |")),
    compact("Three.", "Three."),
], files={"a.txt": ABC, "b.txt": ABC})  # fmt: skip
case("compaction_table_ids_use_ids_digits", "decision 12", [
    read("a.txt"),
    compact("S.", "S.\n\n" + table(f"| a.txt | 1-3 of 3 | {sha(ABC)} | #001000 |")),
], files={"a.txt": ABC}, config={"ids.digits": 6})  # fmt: skip
case("compaction_table_sha_digits_from_config", "decision 12", [
    read("a.txt", f"[#1000 a.txt lines 1-3 of 3 sha {SHA12_ABC}]\n1: a\n2: b\n3: c"),
    compact("S.", "S.\n\n" + table(f"| a.txt | 1-3 of 3 | {SHA12_ABC} | #1000 |")),
], files={"a.txt": ABC}, config={"sha_digits": 12})  # fmt: skip

# ---------------------------------------------------------------- Errors, workspace, bash, config

case("unknown_tool_is_an_error_result", "decision 10", [
    call("frobnicate", {}, "[#1000] There is no tool frobnicate."),
])  # fmt: skip
case("read_absolute_path_outside_is_refused", "decision 11", [
    read("/etc/hostname", "[#1000] /etc/hostname is outside the workspace."),
])  # fmt: skip
case("read_dotdot_outside_is_refused", "decision 11", [
    read("../secret.txt", "[#1000] ../secret.txt is outside the workspace."),
])  # fmt: skip
case("read_link_leading_outside_is_refused", "decision 11", [
    call("bash", {"command": "ln -s /etc/hostname host"}, "[#1000]"),
    read("host", "[#1001] host is outside the workspace."),
])  # fmt: skip
case("read_dotdot_staying_inside_is_allowed", "decision 11", [
    read("src/../a.txt", f"[#1000 src/../a.txt lines 1-3 of 3 sha {sha(ABC)}]\n1: a\n2: b\n3: c"),
], files={"a.txt": ABC, "src/x": "x"})  # fmt: skip
case("bash_exit_code_follows_the_output", "decision 10", [
    call("bash", {"command": "echo out; exit 3"}, "[#1000]\nout\nExit code 3."),
])  # fmt: skip
case("bash_timeout_is_stated", "decision 10", [
    call("bash", {"command": "echo started; sleep 5", "timeout": 0.5},
         "[#1000]\nstarted\nThe command timed out after 0.5 s and was stopped."),
])  # fmt: skip
case("bash_runs_in_the_workspace", "decision 11", [
    call("bash", {"command": "cat a.txt"}, "[#1000]\na\nb\nc\n"),
], files={"a.txt": ABC})  # fmt: skip
case("a_tool_failing_on_the_system_is_an_error_result", "decision 10", [
    call("bash", {"command": "ln -s loop loop"}, "[#1000]"),
    read("loop", "[#1001] The call failed: Too many levels of symbolic links."),
])  # fmt: skip
case("recall_without_an_id_is_bad_arguments", "decision 10", [
    call("recall", {}, "[#1000] The call's arguments are wrong: id must be a result id such as #1a2b."),
])  # fmt: skip
case("apply_patch_move_of_one_file", S5, [
    call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n"
                                  "@@\n-a\n+A\n*** End Patch"},
         f"[#1000 a.txt moved to b.txt sha {sha('A' + chr(10) + 'b' + chr(10) + 'c' + chr(10))}]\n"
         "@@ -1,3 +1,3 @@\n-a\n+A\n b\n c"),
    read("a.txt", "[#1001] There is no file a.txt in the workspace."),
], files={"a.txt": ABC})  # fmt: skip
case("read_path_with_a_nul_is_bad_arguments", "decision 10", [
    read("a\0b", "[#1000] The call's arguments are wrong: path must not hold a NUL character."),
])  # fmt: skip
case("grep_does_not_read_links_leading_outside", "decision 11", [
    call("bash", {"command": "ln -s /etc/passwd pw; echo root > mine.txt"}, "[#1000]"),
    call("grep", {"pattern": "root"}, "[#1001]\nmine.txt:1: root"),
])  # fmt: skip
case("recall_unknown_id_in_capitals_names_it_in_lowercase", S4, [
    call("recall", {"id": "#FFFF"}, "[#1000] No stored result #ffff in this session."),
])  # fmt: skip
case("read_of_a_pipe_is_refused_and_grep_skips_it", "decision 10", [
    call("bash", {"command": "mkfifo pipe; echo hit > a.txt"}, "[#1000]"),
    read("pipe", "[#1001] pipe is not a regular file (a pipe or a device), so it is not read."),
    call("grep", {"pattern": "hit"}, "[#1002]\na.txt:1: hit"),
    call("write", {"path": "pipe", "content": "x"},
         "[#1003] pipe is not a regular file (a pipe or a device), so it is not read."),
    call("apply_patch", {"patch": "*** Begin Patch\n*** Add File: pipe\n+x\n*** End Patch"},
         "[#1004] pipe is not a regular file (a pipe or a device), so it is not read."),
])  # fmt: skip
case("config_sentences_are_templates", "decision 12", [
    out("t", "x"),
    call("recall", {"id": "#ffff"}, "[#1001] Nothing stored as #ffff."),
], config={"text.no_result": "Nothing stored as {ref}."})  # fmt: skip


def main() -> None:
    doc = {
        "spec": "3.0.0",
        "about": "Context hygiene 3.0.0 (spec §1–§7) and ctxview's DESIGN.md decisions 1–12. "
        "Written by conformance/build.py; run with `ctxview conformance conformance/context.json`.",
        "cases": CASES,
    }
    target = Path(__file__).with_name("context.json")
    target.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(CASES)} cases written to {target}")


if __name__ == "__main__":
    main()
