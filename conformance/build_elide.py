"""Writes conformance/elide.json (issue 5: elision, the context as sent, the compaction trigger).

Every expected text and size is worked out from the rules by hand (see the comments), never
pasted from the engine. Run `python conformance/build_elide.py`, then
`ctxview conformance conformance/elide.json`."""

import hashlib
import json
from pathlib import Path

X60 = {"repeat": "x", "times": 60}
XS = "x" * 60
ON = {"elide.enabled": True, "elide.min_chars": 20, "elide.stride": 4, "elide.keep": 2}


def pair(letter, output=X60):
    return [{"message": letter, "role": "assistant"}, {"call": "t", "args": {}, "output": output}]


def pairs(letters):
    """One assistant message and one 60-char tool result per letter."""
    return [step for letter in letters for step in pair(letter)]


def add(name, section, config, steps, files=None):
    """One case, its keys in the order the case format lists them."""
    case = {"name": name, "section": section, "config": config}
    if files is not None:
        case["files"] = files
    cases.append({**case, "steps": steps})


def stub(rid, chars, what):
    return f"tool: [#{rid} elided: {chars:,} chars of {what}; recall #{rid} to see it]"


def tool(rid, text=XS):
    return f"tool: [#{rid}]\n{text}"


def asst(letter):
    return f"assistant: {letter}\ncall t {{}}"


cases = []

# Threshold: nothing is elided until the context (before elision) is longer than the threshold.
# Sizes: "user: go" 8; each pair adds "assistant: a\ncall t {}" 22 and "tool: [#1000]\n"+60 x = 74.
steps = [{"message": "go"}, *pairs("abc")]
# n = 7 messages, 8 + 3*(22+74) + 6 newlines = 302 chars: not past 310.
steps.append(
    {
        "context": "\n".join(
            ["user: go", asst("a"), tool(1000), asst("b"), tool(1001), asst("c"), tool(1002)]
        )
    }
)
steps.append({"state": {"elided": [], "strides": 0, "boundary": 0}})
steps += pair("d")
# n = 9, 400 chars: crossed; boundary = (9-2)//4*4 = 4, so the result at index 2 (#1000) leaves.
steps.append(
    {
        "context": "\n".join(
            [
                "user: go",
                asst("a"),
                stub(1000, 68, "t"),
                asst("b"),
                tool(1001),
                asst("c"),
                tool(1002),
                asst("d"),
                tool(1003),
            ]
        )
    }
)
steps.append({"state": {"elided": ["#1000"], "strides": 1, "boundary": 4, "requests": 4}})
add(
    "nothing_is_elided_below_the_threshold_then_old_results_leave_as_stubs",
    "elide: threshold",
    {**ON, "elide.threshold_chars": 310},
    steps,
)

# Off by default: the same session with no config sends everything.
steps = [{"message": "go"}, *pairs("abcd")]
steps.append(
    {
        "context": "\n".join(
            [
                "user: go",
                asst("a"),
                tool(1000),
                asst("b"),
                tool(1001),
                asst("c"),
                tool(1002),
                asst("d"),
                tool(1003),
            ]
        )
    }
)
steps.append({"state": {"elided": [], "strides": 0}})
add(
    "elision_is_off_by_default",
    "elide: opt-in",
    {"elide.threshold_chars": 10, "elide.min_chars": 20, "elide.stride": 4, "elide.keep": 2},
    steps,
)

# The staircase: stride 4, keep 2, threshold crossed at once. Results sit at indices 2, 4, 6, ...
# n = 1 + 2k after k pairs; boundary = (n-2)//4*4: 0, 0, 4, 4, 8, 8, 12.
steps = [{"message": "go"}]
expect = [
    (0, 0, []),
    (0, 0, []),
    (4, 1, ["#1000"]),
    (4, 1, ["#1000"]),
    (8, 2, ["#1000", "#1001", "#1002"]),
    (8, 2, ["#1000", "#1001", "#1002"]),
    (12, 3, ["#1000", "#1001", "#1002", "#1003", "#1004"]),
]
for k, L in enumerate("abcdefg"):
    steps += pair(L)
    steps.append({"context": {"starts": "user: go"}})
    b, s, e = expect[k]
    steps.append({"state": {"boundary": b, "strides": s, "elided": e, "requests": k + 1}})
add(
    "the_window_moves_only_in_whole_strides",
    "elide: staircase",
    {**ON, "elide.threshold_chars": 100},
    steps,
)

# Short results stay whole: a result of at most elide.min_chars is never a stub.
steps = [
    {"message": "go"},
    {"message": "a", "role": "assistant"},
    {"call": "t", "args": {}, "output": "ok"},
]
steps += pairs("bcd")
# Results: #1000 "ok" (10 chars, index 2), #1001 index 4, #1002 index 6, #1003 index 8. n = 9.
# Size 8 + (22+16) + 3*(22+74) + 8 = 342 > 100: boundary 4: #1000 stays (short), nothing else.
steps.append(
    {
        "context": "\n".join(
            [
                "user: go",
                asst("a"),
                "tool: [#1000]\nok",
                asst("b"),
                tool(1001),
                asst("c"),
                tool(1002),
                asst("d"),
                tool(1003),
            ]
        )
    }
)
steps.append({"state": {"elided": [], "boundary": 4, "strides": 0}})
add("short_results_stay_whole", "elide: min_chars", {**ON, "elide.threshold_chars": 100}, steps)

# Pure stubs: a read elided once is sent with the same bytes on every later request.
lines = "\n".join(f"line {n}" for n in range(1, 11)) + "\n"
sha8 = hashlib.sha256(lines.encode()).hexdigest()[:8]
shown = f"[#1000 a.txt lines 1-10 of 10 sha {sha8}]\n" + "\n".join(
    f"{n}: line {n}" for n in range(1, 11)
)
read_stub = stub(1000, len(shown), "read a.txt")
head = ["user: go", 'assistant: a\ncall read {"path": "a.txt"}', read_stub]
steps = [
    {"message": "go"},
    {"message": "a", "role": "assistant"},
    {"call": "read", "args": {"path": "a.txt"}},
]
steps += pairs("bcd")
steps.append({"context": {"starts": "\n".join(head) + "\n"}})
for L in "efgh":
    steps += pair(L)
    steps.append({"context": {"starts": "\n".join(head) + "\n"}})
steps.append({"state": {"elided": ["#1000", "#1001", "#1002", "#1003", "#1004"], "strides": 3}})
add(
    "a_stub_is_the_same_bytes_on_every_later_request",
    "elide: pure stubs",
    {**ON, "elide.threshold_chars": 100},
    steps,
    files={"a.txt": lines},
)

# Recall brings an elided result back, whole, as a new result at the end of the context.
steps = [{"message": "go"}, *pairs("abc")]
steps.append({"context": {"contains": [stub(1000, 68, "t")]}})
steps.append({"message": "e", "role": "assistant"})
steps.append(
    {
        "call": "recall",
        "args": {"id": "#1000"},
        "expect": f"[#1003 recall #1000 lines 1-1 of 1]\n{XS}",
    }
)
steps.append(
    {
        "context": {
            "contains": [stub(1000, 68, "t")],
            "ends": 'assistant: e\ncall recall {"id": "#1000"}\n'
            + f"tool: [#1003 recall #1000 lines 1-1 of 1]\n{XS}",
        }
    }
)
add(
    "recall_brings_an_elided_result_back",
    "elide: recall",
    {**ON, "elide.threshold_chars": 100},
    steps,
)

# Compaction replaces the context and starts the window afresh: the session must cross the
# threshold again before anything is elided. Before: n = 9, 400 chars > 350 -> #1000 elided.
# After: "user: summary" (13) + 3 pairs = 13 + 288 + 6 = 307 <= 350: nothing elided, although a
# window that stayed crossed would now elide #1004 (index 2, boundary 4).
steps = [{"message": "go"}, *pairs("abcd")]
steps.append({"context": {"contains": [stub(1000, 68, "t")]}})
steps.append({"state": {"elided": ["#1000"], "boundary": 4}})
steps.append({"compact": "summary", "expect": "summary"})
steps.append({"context": "user: summary"})
steps.append({"state": {"elided": [], "boundary": 0}})
steps += pairs("efg")
steps.append(
    {
        "context": "\n".join(
            ["user: summary", asst("e"), tool(1004), asst("f"), tool(1005), asst("g"), tool(1006)]
        )
    }
)
steps.append({"state": {"elided": [], "boundary": 0}})
steps += pair("h")
# n = 9, 405 > 350: crossed again; boundary 4 elides #1004.
steps.append(
    {
        "context": {
            "starts": "\n".join(
                ["user: summary", asst("e"), stub(1004, 68, "t"), asst("f"), tool(1005)]
            )
        }
    }
)
add(
    "compaction_starts_the_window_afresh",
    "elide: compaction",
    {**ON, "elide.threshold_chars": 350},
    steps,
)

# The compaction trigger: compaction.above_tokens, tested at user and tool-result boundaries,
# tokens = characters / 4 rounded up. n = 3: 106 chars = 27 tokens <= 30; n = 5: 204 = 51 > 30.
steps = [{"message": "go"}, *pair("a")]
steps.append({"state": {"compact_due": False}})
steps += pair("b")
steps.append({"state": {"compact_due": True}})
steps.append({"compact": "summary"})
steps.append({"state": {"compact_due": False}})
add(
    "compaction_is_due_above_the_token_threshold",
    "compaction trigger",
    {"compaction.above_tokens": 30},
    steps,
)

# With usage known, the context's tokens are the last request's prompt tokens (input + cache
# read + cache write) plus characters / 4 of what came since: 105 + ceil(98 / 4) = 130 > 120.
steps = [
    {"message": "go"},
    {
        "message": "a",
        "role": "assistant",
        "usage": {
            "input_tokens": 5,
            "output_tokens": 3,
            "cache_read_tokens": 100,
            "cache_write_tokens": 0,
        },
    },
    {"call": "t", "args": {}, "output": X60},
    {"state": {"compact_due": True, "requests": 1}},
]
add(
    "usage_counts_the_tokens_when_known",
    "compaction trigger",
    {"compaction.above_tokens": 120},
    steps,
)

doc = {
    "spec": "3.0.0+elide",
    "about": "Long-session elision (opt-in, elide.*), the context as sent, and the compaction trigger (compaction.above_tokens): issue 5. Run with `ctxview conformance conformance/elide.json`.",
    "cases": cases,
}
with open(Path(__file__).with_name("elide.json"), "w", encoding="utf-8") as f:
    json.dump(doc, f, indent=1, ensure_ascii=False)
    f.write("\n")
