"""The lean first pass of an export: which results exist (so only real ids become links), the
compaction epoch of each (a link after a boundary says the result left the context), sub-agents
under their calls, the table of contents, and where a long session's blocks may be split
between two processes. No bodies are read; for 100,000 results this is a few tens of MB.
(Which page a block goes on is decided from the blocks as written: html.py.)"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxview.export.source import (
    L_CALL,
    L_KIND,
    L_PROMPT,
    L_RID,
    L_ROLE,
    L_SEQ,
    L_SIZE,
    SessionInfo,
    Source,
)
from ctxview.export.text import cut
from ctxview.rules.config import Config, ConfigError
from ctxview.rules.ids import format_id

EDIT_KINDS = frozenset({"edit", "created", "deleted", "moved", "patch"})
STUB_KINDS = frozenset({"unchanged", "same"})


@dataclass
class Space:
    """One session in the export: the main one (anchors `#1005`) or a sub-agent (`#a1-1005`)."""

    info: SessionInfo
    prefix: str = ""
    number: int = 0  # a sub-agent's number in the export, 0 for the main session
    digits: int = 4
    epoch_of: dict[int, int] = field(default_factory=dict)  # rid -> compactions before it
    parent: Space | None = None
    parent_call: str | None = None
    by_call: dict[str, list[Space]] = field(default_factory=dict)  # call_ref -> its sub-agents
    orphans: list[Space] = field(default_factory=list)  # sub-agents whose call is not here
    call_rid: dict[str, int] = field(default_factory=dict)  # call_ref -> its result's id
    pointed_by: dict[int, list[int]] = field(default_factory=dict)  # rid -> stubs/recalls to it
    # rid -> the session of the export holding it: a session and its sub-agents share one id
    # space (store/tree.py), so a sub-agent's recall of its parent's id links there. One dict
    # for the whole export.
    tree: dict[int, Space] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.info.row.id

    def holder(self, rid: int) -> Space | None:
        """The space whose result `rid` is: this one's own first, else another of the tree's."""
        return self if rid in self.epoch_of else self.tree.get(rid)

    def anchor(self, rid: int) -> str:
        return self.prefix + format_id(rid, self.digits)[1:]

    def ref(self, rid: int) -> str:
        return format_id(rid, self.digits)

    @property
    def agent_anchor(self) -> str:
        return f"agent-{self.number}"


@dataclass
class TocEntry:
    kind: str  # prompt | boundary
    seq: int
    label: str
    number: int = 0  # a boundary's number
    page: int = 0  # the page it is on (set once the pages are known)


# A session estimated this large or more (or four pages or more) is made by two processes
# (html.py); below it, the second process's start costs more than it saves.
SPLIT_BYTES = 40_000_000


@dataclass
class Plan:
    main: Space
    size: int = 0  # the estimated bytes of the main session's blocks
    split: int | None = None  # the first seq of the second half, when there is one
    open_at_split: frozenset[str] = frozenset()  # calls whose results come after `split`
    toc: list[TocEntry] = field(default_factory=list)
    spaces: list[Space] = field(default_factory=list)  # every sub-agent, in number order


def _digits(info: SessionInfo) -> int:
    try:
        return int(Config(info.row.overrides)["ids.digits"])
    except (ConfigError, ValueError, TypeError):
        return 4


def _agent_size(info: SessionInfo) -> int:
    r = info.row
    return int(r.chars_shown * 2.5 + r.chars_stored + r.events * 300) + sum(
        _agent_size(c) for c in info.children
    )


def build(source: Source, info: SessionInfo, split_at: int | None = None) -> Plan:
    """The plan of a session's export. `split_at`: when the session's estimated size is that
    or more, find where its blocks divide in two halves by size, for two processes to make."""
    split = split_at is not None
    main = Space(info, digits=_digits(info))
    plan = Plan(main)
    counter = [0]
    _attach_children(source, main, plan, counter)
    size = 0.0
    open_calls: set[str] = set()
    starts: list[tuple[float, int, frozenset[str]]] = []  # (size before, seq, calls open)
    epoch = 0
    epoch_of, call_rid = main.epoch_of, main.call_rid
    for row in source.lean(main.id):
        kind, ref = row[L_KIND], row[L_CALL]
        joins = kind == "result" and ref is not None and ref in open_calls
        if not joins:
            if split:
                starts.append((size, row[L_SEQ], frozenset(open_calls)))
            if kind == "call" and ref:
                open_calls.add(ref)
                for child in main.by_call.get(ref, ()):
                    size += _agent_size(child.info)
        size += row[L_SIZE]
        if kind == "result":
            open_calls.discard(ref or "")
            rid = row[L_RID]
            if rid is None:
                continue
            epoch_of[rid] = epoch
            if ref:
                call_rid[ref] = rid
        elif kind == "compaction":
            epoch += 1
            plan.toc.append(TocEntry("boundary", row[L_SEQ], f"compaction {epoch}", epoch))
        elif kind == "message" and row[L_ROLE] == "user" and row[L_PROMPT]:
            plan.toc.append(TocEntry("prompt", row[L_SEQ], _label(row[L_PROMPT])))
    plan.size = int(size)
    if split_at is not None and size >= split_at and len(starts) > 1:
        half = next((s for s in starts if s[0] >= size / 2), starts[-1])
        plan.split, plan.open_at_split = half[1], half[2]
    _pointers(source, main)
    for space in (main, *plan.spaces):
        space.tree = main.tree
        for rid in space.epoch_of:
            main.tree.setdefault(rid, space)
    return plan


def _label(text: str) -> str:
    return cut(" ".join(text.split()), 120)


def _attach_children(source: Source, space: Space, plan: Plan, counter: list[int]) -> None:
    """Number the sub-agents, hang each under its parent's call, and map their own ids."""
    calls: set[str] = set()
    if space.info.children:
        calls = source.store.call_refs(space.id)
    for child in space.info.children:
        counter[0] += 1
        n = counter[0]
        sub = Space(child, prefix=f"a{n}-", number=n, digits=_digits(child), parent=space,
                    parent_call=child.row.parent_call)  # fmt: skip
        plan.spaces.append(sub)
        if child.row.parent_call and child.row.parent_call in calls:
            space.by_call.setdefault(child.row.parent_call, []).append(sub)
        else:
            space.orphans.append(sub)
        _map_space(source, sub)
        _attach_children(source, sub, plan, counter)


def _map_space(source: Source, space: Space) -> None:
    epoch = 0
    for row in source.lean(space.id):
        kind = row[L_KIND]
        if kind == "result" and row[L_RID] is not None:
            space.epoch_of[row[L_RID]] = epoch
            if row[L_CALL]:
                space.call_rid[row[L_CALL]] = row[L_RID]
        elif kind == "compaction":
            epoch += 1
    _pointers(source, space)


def _pointers(source: Source, space: Space) -> None:
    """Which stubs and recalls point at each result (the target links back to them)."""
    for rid, points_to in source.store.pointers(space.id):
        found = space.pointed_by.setdefault(points_to, [])
        if len(found) < 50:
            found.append(rid)
