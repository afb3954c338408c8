"""The transcript's model: heights in a Fenwick tree, and blocks loaded tail first then in older
chunks, which must come out the same as loading every row at once."""

from __future__ import annotations

import random

from ctxview.store.reader import OUTLINE_COLUMNS
from ctxview.viewer.layout.heights import Heights
from ctxview.viewer.layout.outline import Outline


def test_heights_match_a_plain_list() -> None:
    rng = random.Random(3)
    for _ in range(40):
        values = [rng.randint(0, 6) for _ in range(rng.randint(1, 200))]
        h = Heights(values[: len(values) // 2])
        for v in values[len(values) // 2 :]:
            h.append(v)
        for _ in range(30):
            i = rng.randrange(len(values))
            values[i] = rng.randint(0, 9)
            h.set(i, values[i])
        assert h.total == sum(values)
        for i in range(len(values)):
            assert h.offset(i) == sum(values[:i])
        for y in range(sum(values)):
            b = h.find(y)
            assert sum(values[:b]) <= y < sum(values[: b + 1])


def _row(seq: int, kind: str, **kw: object) -> tuple[object, ...]:
    row = dict.fromkeys(OUTLINE_COLUMNS)
    row.update(seq=seq, kind=kind, capped=0, shown_lines=2, stored_lines=1, text_lines=1, **kw)
    return tuple(row[c] for c in OUTLINE_COLUMNS)


def _session(n: int) -> list[tuple[object, ...]]:
    rows, seq, rid = [], 0, 0x1000
    for i in range(n):
        seq += 1
        if i % 7 == 0:
            rows.append(_row(seq, "message", role="user"))
            seq += 1
        if i % 40 == 39:
            rows.append(_row(seq, "compaction"))
            seq += 1
        rows.append(_row(seq, "call", tool="bash", call_ref=f"c{i}"))
        seq += 1
        rows.append(_row(seq, "result", tool="bash", call_ref=f"c{i}", rid=rid, rkind="full"))
        rid += 1
    rows.append(_row(seq + 1, "end"))
    return rows


def _shape(o: Outline) -> list[tuple[object, ...]]:
    return [(b.kind, b.seq, b.rseq, b.rid, b.epoch, b.index) for b in o.blocks]


def test_tail_first_then_older_chunks_equals_all_at_once() -> None:
    rows = _session(300)
    whole = Outline()
    whole.append(rows)
    for tail_size, chunk in [(1, 7), (10, 50), (33, 33), (200, 1000)]:
        o = Outline()
        tail = rows[-tail_size:]
        first = tail[0][0]
        o.set_epoch(sum(1 for r in rows if r[1] == "compaction" and r[0] < first))
        o.append(tail)
        while o.first_seq and o.first_seq > 1:
            older = [r for r in rows if r[0] < o.first_seq][-chunk:]
            epoch = sum(1 for r in rows if r[1] == "compaction" and r[0] < older[0][0])
            o.prepend(older, epoch)
        assert _shape(o) == _shape(whole), (tail_size, chunk)
        assert [b.seq for b in o.boundaries] == [b.seq for b in whole.boundaries]
        assert set(o.by_rid) == set(whole.by_rid)
        assert all(o.by_rid[r].rid == r for r in o.by_rid)


def test_a_call_gets_its_result_later() -> None:
    o = Outline()
    o.append([_row(1, "call", tool="bash", call_ref="a")])
    new, changed = o.append([_row(2, "result", tool="bash", call_ref="a", rid=0x1000)])
    assert new == [] and changed == [o.blocks[0]] and o.blocks[0].rid == 0x1000
    new, changed = o.append([_row(3, "weird")])
    assert new[0].kind == "unknown" and changed == []
