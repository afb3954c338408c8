"""§1 ids: `#` and lowercase hex, at least ids.digits digits; the `#` optional when given."""

from __future__ import annotations

import pytest

from ctxview.rules.ids import ID_IN_TEXT, format_id, parse_id


@pytest.mark.parametrize(
    ("rid", "digits", "text"),
    [(0x1000, 4, "#1000"), (0xA3F2, 4, "#a3f2"), (0x10000, 4, "#10000"), (1, 4, "#0001"),
     (0x1000, 6, "#001000"), (0x100, 2, "#100")],
)  # fmt: skip
def test_format(rid: int, digits: int, text: str) -> None:
    assert format_id(rid, digits) == text


@pytest.mark.parametrize(
    ("text", "rid"),
    [("#a3f2", 0xA3F2), ("a3f2", 0xA3F2), (" #A3F2 ", 0xA3F2), ("#10000", 0x10000),
     ("", None), ("#", None), ("xyz", None), ("#12 34", None)],
)  # fmt: skip
def test_parse(text: str, rid: int | None) -> None:
    assert parse_id(text) == rid


def test_round_trip() -> None:
    for rid in (0, 1, 0xFFFF, 0x10000, 0xABCDEF):
        assert parse_id(format_id(rid)) == rid


def test_ids_in_running_text() -> None:
    text = "Unchanged since #a3f2, see #10000 but not x#1234 or #12 or ##abcd"
    assert ID_IN_TEXT.findall(text) == ["a3f2", "10000"]
