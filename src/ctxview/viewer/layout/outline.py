"""A session's transcript as blocks: a message, a call with its result, a compaction boundary,
the end, or an unknown kind (shown dim). Built from the store's lean outline rows, so 100,000
results cost a few tens of MB; full events and bodies are fetched only for what is on screen."""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import Any

from ctxview.store.reader import OUTLINE_COLUMNS

_serials = itertools.count(1)

# OUTLINE_COLUMNS positions.
(
    SEQ,
    KIND,
    ROLE,
    TOOL,
    CALL_REF,
    RID,
    RKIND,
    POINTS_TO,
    CAPPED,
    SHOWN_LINES,
    STORED_LINES,
    TEXT_LINES,
) = range(len(OUTLINE_COLUMNS))

EDIT_KINDS = frozenset({"edit", "created", "deleted", "moved", "patch"})
STUB_KINDS = frozenset({"unchanged", "same"})


@dataclass(eq=False, slots=True)
class Block:
    kind: str  # message | tool | boundary | end | unknown
    seq: int  # the block's first event (a tool block: its call, or its result without one)
    role: str | None = None
    tool: str | None = None
    call_ref: str | None = None
    rseq: int | None = None  # a tool block's result event
    rid: int | None = None
    rkind: str | None = None
    points_to: int | None = None
    capped: bool = False
    shown_lines: int = 0
    stored_lines: int = 0
    text_lines: int = 0
    epoch: int = 0  # compaction boundaries before this block's content
    index: int = 0
    serial: int = field(default_factory=lambda: next(_serials))
    # What the person opened; bumping `version` drops the block's cached lines.
    open: bool = False
    elision_open: bool = False
    detail_open: bool = False  # a message's thinking, a call's prompt, content or input
    version: int = 0

    @property
    def seqs(self) -> tuple[int, ...]:
        return (self.seq,) if self.rseq is None or self.rseq == self.seq else (self.seq, self.rseq)

    @property
    def is_stub(self) -> bool:
        return self.rkind in STUB_KINDS

    @property
    def boundary_number(self) -> int:
        """A boundary block's number, 1 for the session's first compaction."""
        return self.epoch + 1

    def touch(self) -> None:
        self.version += 1


def _result_into(block: Block, row: tuple[Any, ...]) -> None:
    block.rseq = row[SEQ]
    block.rid = row[RID]
    block.rkind = row[RKIND]
    block.points_to = row[POINTS_TO]
    block.capped = bool(row[CAPPED])
    block.shown_lines = row[SHOWN_LINES] or 0
    block.stored_lines = row[STORED_LINES] or 0
    block.tool = block.tool or row[TOOL]


class Outline:
    """The blocks of one session in order, with the maps a viewer navigates by."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.by_rid: dict[int, Block] = {}
        self.boundaries: list[Block] = []
        self.first_seq: int | None = None
        self.last_seq = 0
        self._open_calls: dict[str, Block] = {}  # call_ref -> a call still waiting for its result
        self._epoch = 0
        self.joined: list[Block] = []  # calls of earlier rows that got their result

    def __len__(self) -> int:
        return len(self.blocks)

    def rows_to_blocks(
        self,
        rows: list[tuple[Any, ...]],
        epoch: int,
        open_calls: dict[str, Block],
    ) -> tuple[list[Block], int, list[Block]]:
        """Blocks for consecutive rows starting in `epoch` (and the boundaries among them); a
        result joins its call."""
        out: list[Block] = []
        boundaries: list[Block] = []
        for row in rows:
            kind = row[KIND]
            if kind == "result":
                ref = row[CALL_REF]
                call = open_calls.pop(ref, None) if ref else None
                if call is not None:
                    _result_into(call, row)
                    if call.seq < rows[0][SEQ]:
                        self.joined.append(call)  # a block shown before: it must be redrawn
                    if row[RID] is not None:
                        self.by_rid[row[RID]] = call
                    continue
                block = Block("tool", row[SEQ], call_ref=ref, epoch=epoch)
                _result_into(block, row)
            elif kind == "call":
                block = Block("tool", row[SEQ], tool=row[TOOL], call_ref=row[CALL_REF], epoch=epoch)
                if row[CALL_REF]:
                    open_calls[row[CALL_REF]] = block
            elif kind == "message":
                block = Block("message", row[SEQ], role=row[ROLE], text_lines=row[TEXT_LINES] or 1,
                              epoch=epoch)  # fmt: skip
            elif kind == "compaction":
                block = Block("boundary", row[SEQ], text_lines=row[TEXT_LINES] or 1, epoch=epoch)
                boundaries.append(block)
                epoch += 1
            elif kind == "end":
                block = Block("end", row[SEQ], epoch=epoch)
            else:
                block = Block("unknown", row[SEQ], role=kind, epoch=epoch)
            if block.rid is not None:
                self.by_rid[block.rid] = block
            out.append(block)
        return out, epoch, boundaries

    def append(self, rows: list[tuple[Any, ...]]) -> tuple[list[Block], list[Block]]:
        """Add rows past the last one; returns (new blocks, existing blocks that changed: a
        call that got its result)."""
        if not rows:
            return [], []
        self.joined = []
        new, self._epoch, bounds = self.rows_to_blocks(rows, self._epoch, self._open_calls)
        changed = self.joined
        start = len(self.blocks)
        for i, block in enumerate(new):
            block.index = start + i
        self.blocks.extend(new)
        self.boundaries.extend(bounds)
        if self.first_seq is None:
            self.first_seq = rows[0][SEQ]
        self.last_seq = rows[-1][SEQ]
        return new, changed

    def prepend(self, rows: list[tuple[Any, ...]], epoch: int) -> list[Block]:
        """Add older rows (that end just before the first loaded one), starting in `epoch`."""
        if not rows:
            return []
        open_calls: dict[str, Block] = {}
        new, _, bounds = self.rows_to_blocks(rows, epoch, open_calls)
        # A call at the end of the older rows whose result opens the newer ones.
        while self.blocks and open_calls:
            head = self.blocks[0]
            call = open_calls.pop(head.call_ref, None) if head.call_ref else None
            if call is None or head.kind != "tool" or head.rseq is None or head.seq != head.rseq:
                break
            call.rseq, call.rid, call.rkind, call.points_to = (
                head.rseq,
                head.rid,
                head.rkind,
                head.points_to,
            )
            call.capped, call.shown_lines, call.stored_lines = (
                head.capped,
                head.shown_lines,
                head.stored_lines,
            )
            if call.rid is not None:
                self.by_rid[call.rid] = call
            self.blocks.pop(0)
        self.blocks[:0] = new
        for i, block in enumerate(self.blocks):
            block.index = i
        self.boundaries[:0] = bounds
        self.first_seq = rows[0][SEQ]
        return new

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch

    def block_of(self, rid: int) -> Block | None:
        return self.by_rid.get(rid)

    def block_at_seq(self, seq: int) -> Block | None:
        """The loaded block that holds event `seq` (its call or its result), or None."""
        i = bisect.bisect_right(self.blocks, seq, key=lambda b: b.seq) - 1
        # A result whose call came earlier (other calls between) lives in an earlier block.
        for block in self.blocks[max(i - 64, 0) : i + 1][::-1] if i >= 0 else []:
            if seq in block.seqs:
                return block
        return None

    def epoch_of(self, rid: int) -> int | None:
        block = self.by_rid.get(rid)
        return None if block is None else block.epoch
