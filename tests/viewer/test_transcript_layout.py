"""The transcript's parts without a screen: the layout model (where blocks lie, measured heights
kept across a prepend, the view anchored when a block above it grows) and the signal the loader
wakes its waiters with (woken by a firing, not by polling)."""

from __future__ import annotations

import asyncio
from typing import Any

from ctxview.store.reader import OUTLINE_COLUMNS
from ctxview.viewer.layout.transcript_layout import TranscriptLayout
from ctxview.viewer.loading.signal import Signal


def row(seq: int, kind: str, **kw: Any) -> tuple[Any, ...]:
    values = dict.fromkeys(OUTLINE_COLUMNS)
    values.update(seq=seq, kind=kind, capped=0, text_lines=1, **kw)
    return tuple(values[c] for c in OUTLINE_COLUMNS)


def session(first: int, count: int) -> list[tuple[Any, ...]]:
    """`count` turns from seq `first`: a message, then a call and its result."""
    rows = []
    for n in range(count):
        seq = first + 3 * n
        rows.append(row(seq, "message", role="assistant"))
        rows.append(row(seq + 1, "call", tool="bash", call_ref=f"c{seq}"))
        rows.append(row(seq + 2, "result", call_ref=f"c{seq}", rid=0x1000 + seq, rkind="full",
                        shown_lines=2, stored_lines=2))  # fmt: skip
    return rows


def test_a_result_joins_its_call_and_every_line_has_its_block() -> None:
    layout = TranscriptLayout()
    new = layout.append(session(1, 3))
    assert [b.kind for b in new] == ["message", "tool"] * 3
    tool = layout.blocks[1]
    assert (tool.seq, tool.rseq, tool.rid) == (2, 3, 0x1001)
    total = layout.heights.total
    assert total == sum(layout.estimate(b) for b in layout.blocks)
    seen = [layout.block_at(y) for y in range(total)]
    assert all(at is not None for at in seen)
    assert [at[0] for at in seen if at is not None and at[1] == 0] == layout.blocks
    assert layout.block_at(total) is None
    assert layout.visible(0, total) == layout.blocks


def test_older_rows_keep_the_heights_measured_and_the_view_stays_on_its_line() -> None:
    layout = TranscriptLayout()
    layout.append(session(31, 10))
    measured = layout.blocks[3]
    assert layout.measured(measured, 40)
    assert not layout.measured(layout.blocks[4], layout.heights.get(4))  # as laid out
    # Measured above the line at the top of the view: the view moves down by the growth.
    top = layout.heights.offset(5)
    grew = 40 - layout.estimate(measured)
    assert layout.commit(top) == grew
    assert layout.commit(top) is None  # nothing pending any more
    layout.prepend(session(1, 10), 0)
    assert layout.blocks[23] is measured and layout.heights.get(23) == 40
    assert [b.index for b in layout.blocks] == list(range(len(layout.blocks)))


def test_a_block_merged_away_by_a_prepend_takes_no_measured_height() -> None:
    layout = TranscriptLayout()
    rows = session(1, 4)
    layout.append(rows[5:])  # starts with a result whose call is among the older rows
    head = layout.blocks[0]
    assert head.kind == "tool" and head.seq == head.rseq
    layout.measured(head, 30)
    layout.prepend(rows[:5], 0)
    assert head not in layout.blocks  # the result went into its call's block
    assert layout.commit(0) == 0
    assert layout.heights.total == sum(layout.estimate(b) for b in layout.blocks)


async def test_a_waiter_wakes_when_the_signal_fires_and_the_condition_holds() -> None:
    signal = Signal()
    value: list[str | None] = [None]
    times = [0]
    asked = asyncio.Event()

    def found() -> str | None:
        times[0] += 1
        asked.set()
        return value[0]

    waiter = asyncio.create_task(signal.until(found, 5.0))
    await asyncio.wait_for(asked.wait(), 1.0)  # asked at the start
    asked.clear()
    signal.fire()  # woken, but the condition does not hold yet: back to waiting
    await asyncio.wait_for(asked.wait(), 1.0)
    assert not waiter.done()
    value[0] = "here"
    signal.fire()
    assert await asyncio.wait_for(waiter, 1.0) == "here"
    assert times[0] == 3  # at the start and at each firing: never in between


async def test_a_waiter_gives_up_at_its_timeout() -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await Signal().until(lambda: None, 0.05) is None
    assert 0.04 <= loop.time() - start < 1.0
