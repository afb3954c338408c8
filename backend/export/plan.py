"""The lean first pass of an export: which results exist (so only real ids become links), the
compaction epoch of each (a link after a boundary says the result left the context), the page
each block goes on (a big session is split, links still land), sub-agents under their calls,
and the table of contents. No bodies are read; for 100,000 results this is a few tens of MB."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Config, ConfigError
from ..rules.ids import format_id
from .source import L_CALL, L_KIND, L_PROMPT, L_RID, L_ROLE, L_SEQ, L_SIZE, SessionInfo, Source

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
    page_of: dict[int, int] = field(default_factory=dict)  # rid -> page (main session)
    page: int = 0  # a sub-agent's page: its parent call's
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

    def page_for(self, rid: int) -> int:
        return self.page_of.get(rid, self.page) if not self.prefix else self.page

    @property
    def agent_anchor(self) -> str:
        return f"agent-{self.number}"


@dataclass
class TocEntry:
    kind: str  # prompt | boundary
    seq: int
    page: int
    label: str
    number: int = 0  # a boundary's number


@dataclass
class Plan:
    main: Space
    pages: int = 1
    page_starts: list[int] = field(default_factory=list)  # first block seq of pages 2..n
    open_at: list[frozenset[str]] = field(default_factory=list)  # calls awaiting results there
    page_sizes: list[int] = field(default_factory=list)  # estimated bytes per page
    page_ids: list[tuple[int | None, int | None]] = field(default_factory=list)
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


def build(source: Source, info: SessionInfo, page_bytes: int | None) -> Plan:
    """The plan of a session's export. `page_bytes`: split into pages of about that size (None:
    one page whatever the size)."""
    main = Space(info, digits=_digits(info))
    plan = Plan(main)
    counter = [0]
    _attach_children(source, main, plan, counter)
    page, size = 0, 0.0
    first_rid: int | None = None
    last_rid: int | None = None
    open_calls: dict[str, int] = {}
    epoch = 0
    epoch_of, page_of, call_rid = main.epoch_of, main.page_of, main.call_rid
    for row in source.lean(main.id):
        kind, ref = row[L_KIND], row[L_CALL]
        joins = kind == "result" and ref is not None and ref in open_calls
        if not joins:
            if page_bytes is not None and size >= page_bytes:
                plan.page_sizes.append(int(size))
                plan.page_ids.append((first_rid, last_rid))
                page += 1
                size, first_rid, last_rid = 0, None, None
                plan.page_starts.append(row[L_SEQ])
                plan.open_at.append(frozenset(open_calls))
            if kind == "call" and ref:
                open_calls[ref] = page
                for child in main.by_call.get(ref, ()):
                    _place(child, page)
                    size += _agent_size(child.info)
        size += row[L_SIZE]
        if kind == "result":
            rid = row[L_RID]
            if rid is None:
                continue
            epoch_of[rid] = epoch
            page_of[rid] = open_calls.pop(ref, page) if joins else page
            first_rid = rid if first_rid is None else first_rid
            last_rid = rid
            if ref:
                call_rid[ref] = rid
        elif kind == "compaction":
            epoch += 1
            plan.toc.append(TocEntry("boundary", row[L_SEQ], page, f"compaction {epoch}", epoch))
        elif kind == "message" and row[L_ROLE] == "user" and row[L_PROMPT]:
            plan.toc.append(TocEntry("prompt", row[L_SEQ], page, _label(row[L_PROMPT])))
    for child in main.orphans:
        _place(child, page)
    plan.page_sizes.append(int(size))
    plan.page_ids.append((first_rid, last_rid))
    plan.pages = page + 1
    _pointers(source, main)
    for space in (main, *plan.spaces):
        space.tree = main.tree
        for rid in space.epoch_of:
            main.tree.setdefault(rid, space)
    return plan


def _label(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 120 else line[:119] + "…"


def _place(space: Space, page: int) -> None:
    space.page = page
    for kids in space.by_call.values():
        for k in kids:
            _place(k, page)
    for k in space.orphans:
        _place(k, page)


def _attach_children(source: Source, space: Space, plan: Plan, counter: list[int]) -> None:
    """Number the sub-agents, hang each under its parent's call, and map their own ids."""
    calls: set[str] = set()
    if space.info.children:
        calls = {
            r[0]
            for r in source.conn.execute(
                "SELECT call_ref FROM events WHERE session = ? AND kind = 'call' "
                "AND call_ref IS NOT NULL",
                (space.id,),
            )
        }
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
    for rid, points_to in source.conn.execute(
        "SELECT rid, points_to FROM events WHERE session = ? AND points_to IS NOT NULL "
        "AND rid IS NOT NULL ORDER BY seq",
        (space.id,),
    ):
        found = space.pointed_by.setdefault(points_to, [])
        if len(found) < 50:
            found.append(rid)
