"""§3 the cap, as a pure function: head and tail within their bounds, one elision line."""

from __future__ import annotations

import pytest

from ctxview.rules.cap import cap, needs_cap
from ctxview.rules.config import Config

CFG = Config()


def lines(n: int, fmt: str = "line {}") -> str:
    return "\n".join(fmt.format(i) for i in range(1, n + 1))


@pytest.mark.parametrize(
    ("text", "capped"),
    [
        (lines(400), False),
        (lines(401), True),
        (lines(400) + "\n", False),  # a final newline starts no line
        ("x" * 40_000, False),
        ("x" * 40_001, True),
        ("", False),
    ],
)
def test_bounds_are_over_not_at(text: str, capped: bool) -> None:
    assert needs_cap(text, CFG) is capped
    assert (cap(text, "#1000", CFG) is not None) is capped


def test_401_lines() -> None:
    c = cap(lines(401), "#1000", CFG)
    assert c is not None
    assert (c.head_lines, c.tail_lines, c.elided, c.total_lines) == (200, 100, 101, 401)
    out = c.text.split("\n")
    assert out[:2] == ["line 1", "line 2"] and out[199] == "line 200"
    assert out[200] == "[101 lines elided, full output #1000]"
    assert out[201] == "line 302" and out[-1] == "line 401" and len(out) == 301


def test_single_long_line_is_cut_with_zero_elided() -> None:
    c = cap("y" * 50_000, "#abcd", CFG)
    assert c is not None
    assert c.text == "y" * 20_000 + " […cut]\n[0 lines elided, full output #abcd]"
    assert c.elided == 0


def test_head_chars_count_the_newlines_between_lines() -> None:
    # 3 lines of 6666 + 2 newlines = 20,000 exactly; a 4th would pass it.
    text = "\n".join(["a" * 6666] * 4 + ["b" * 136] * 100)
    c = cap(text, "#1", CFG)
    assert c is not None
    head = c.text.split("\n[")[0]
    assert len(head) == 20_000 and c.head_lines == 3
    tail = c.text.split("full output #1]\n")[1]
    assert len(tail) == 10_000 and c.tail_lines == 73


def test_crlf_lines_lose_their_cr() -> None:
    c = cap("\r\n".join(["r"] * 500) + "\r\n", "#1", CFG)
    assert c is not None and "\r" not in c.text
    assert c.total_lines == 500 and c.elided == 200


def test_config_bounds() -> None:
    cfg = Config({"cap.max_lines": 5, "cap.head_lines": 2, "cap.tail_lines": 1})
    c = cap("1\n2\n3\n4\n5\n6", "#9", cfg)
    assert c is not None and c.text == "1\n2\n[3 lines elided, full output #9]\n6"


def test_tail_stops_at_a_line_longer_than_tail_chars() -> None:
    text = lines(450) + "\n" + "w" * 10_001 + "\nlast"
    c = cap(text, "#1", CFG)
    assert c is not None
    assert c.tail_lines == 1 and c.text.endswith("full output #1]\nlast")


def test_fit_scales_the_bounds_under_a_hosts_limit() -> None:
    """A host that shows at most 20,000 characters (Claude Code's Grep): whatever the text,
    the capped text with its elision line fits, and head and tail keep their 2:1 share."""
    from ctxview.rules.cap import fit

    fitted = fit(CFG, 20_000)
    assert fitted["cap.max_chars"] < 20_000
    assert abs(fitted["cap.head_chars"] - 2 * fitted["cap.tail_chars"]) <= 2
    assert fitted["cap.max_lines"] == CFG["cap.max_lines"]  # lines are not the host's concern
    for text in (lines(300, "{} " + "w" * 200), "y" * 35_000, lines(5000)):
        capped = cap(text, "#1000", fitted)
        assert capped is not None
        assert len(f"[#1000]\n{capped.text}") <= 20_000
        assert "elided, full output #1000]" in capped.text
    assert fit(CFG, 50_000) is CFG  # the spec's bounds already fit: kept as they are
    assert fit(Config({"cap.max_lines": 100}), 20_000)["cap.max_lines"] == 100  # overrides kept
