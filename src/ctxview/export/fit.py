"""A session's Markdown summary that fits a size: what GitHub takes in an issue or a pull
request's comment (65,536 characters), whatever the session's length.

It holds the prompts, the compaction boundaries with their summaries, the files changed with
their diffs, every other result folded to its first line, the assistant's messages by their
first line, the sub-agents by name, and a note of what was left out. Everything is gathered in
one pass (each piece already in its few shorter forms); then, while the whole is too long, the
least needed kind of piece is shortened a step (results first, then messages, sub-agents,
diffs, boundaries, prompts last); when every kind is at its shortest, the pieces of a kind that
still do not fit are left out from its middle (its first and last kept) and counted."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ctxview.export.markdown import fence
from ctxview.export.plan import EDIT_KINDS, Plan
from ctxview.export.source import Item, Source, extra
from ctxview.export.tally import Tally
from ctxview.export.text import ANSI, count_lines, cut
from ctxview.report.call_summary import args_summary, parse_args

GITHUB = 65_536  # characters GitHub takes in an issue or a pull request's comment
# The order pieces are shortened in, the least needed first; a prompt is shortened last.
ORDER = ("result", "assistant", "agent", "diff", "boundary", "prompt")
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})", re.M)
FILES_LISTED = 300  # files changed listed at most (the rest counted)


@dataclass
class Piece:
    kind: str
    forms: list[str]  # from the fullest to the shortest; "" is left out
    what: str = ""  # what is left out when it is shortened (for the note)


@dataclass
class _Changed:
    edits: int = 0
    added: int = 0
    removed: int = 0


@dataclass
class Summary:
    pieces: list[Piece] = field(default_factory=list)
    files: dict[str, _Changed] = field(default_factory=dict)
    diff_lines: int = 0  # of every diff, in full


def _prose(text: str) -> str:
    """Text a person or the model wrote, safe in the summary: raw HTML neutralised, a code
    fence left open by a cut closed."""
    text = _HTML_START.sub("&lt;", text)
    fences = _FENCE.findall(text)
    if len(fences) % 2:
        text += "\n" + fences[-1][1]
    return text


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def _code(text: str) -> str:
    """One line as inline code (its backticks made quotes: a span cannot hold them safely)."""
    return f"`{text.replace('`', chr(39))}`" if text else ""


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line.strip()
    return ""


def _prompt(text: str) -> Piece:
    forms = [_quote(_prose(cut(text, n))) for n in (4000, 1500, 500)]
    forms += [_quote(_prose(cut(" ".join(text.split()), n))) for n in (160, 80)]
    return Piece("prompt", [f"**● user**\n\n{f}" for f in forms], "prompts cut short")


def _assistant(text: str) -> Piece:
    first = _first_line(text)
    if not first:
        return Piece("assistant", [""])
    more = " …" if count_lines(text) > 1 else ""
    return Piece("assistant", [f"**● assistant** {_prose(cut(first, n))}{more}" for n in (300, 120)]
                 + [""], "assistant messages")  # fmt: skip


def _boundary(number: int, text: str) -> Piece:
    head = f"## ━━ compaction {number} ━━"
    forms = [f"{head}\n\n{_prose(cut(text, n))}" for n in (2000, 600, 200)] + [head]
    return Piece("boundary", forms, "compaction summaries cut short")


def _result(tool: str, summary: str, item: Item) -> Piece:
    shown = item.shown or ""
    bracket, _, body = shown.partition("\n")
    if "\x1b" in body:
        body = ANSI.sub("", body)
    first = _first_line(body)
    rest = count_lines(body) - (1 if first else 0)
    tail = f" (+{rest:,} lines)" if rest > 0 else ""
    ref = bracket.split(" ", 1)[0].lstrip("[").rstrip("]") if bracket.startswith("[#") else ""
    forms = []
    for call, line in ((160, 160), (80, 80), (60, 0)):
        head = f"**▸ {tool}** {_code(cut(summary, call))}".rstrip()
        said = f" → {ref} {_code(cut(first, line))}{tail}" if line and first else f" → {ref}"
        forms.append(head + said.rstrip(" →"))
    return Piece("result", [*forms, ""], "results")


def _diff(tool: str, path: str, added: int | None, removed: int | None, item: Item,
          anchor: str) -> tuple[Piece, int]:  # fmt: skip
    shown = item.shown or ""
    body = shown.partition("\n")[2]
    lines = body.split("\n") if body else []
    stat = f" +{added} −{removed}" if added is not None and removed is not None else ""
    head = f'<a id="{anchor}"></a>**▸ {tool}** {_code(path)}{stat}'
    forms = []
    for n in (80, 30, 10):
        shownl = lines[:n]
        more = f"\n… {len(lines) - n:,} more lines" if len(lines) > n else ""
        forms.append(f"{head}\n\n{fence(chr(10).join(shownl) + more, 'diff')}" if shownl else head)
    forms.append(head)
    return Piece("diff", forms, "diff lines"), len(lines)


def gather(source: Source, plan: Plan) -> Summary:
    """One pass over the session: each piece in its forms, the files changed."""
    summary = Summary()
    pending: dict[str, tuple[str, str]] = {}  # call_ref -> (tool, its one-line summary)
    epoch = 0
    space = plan.main
    for item in source.items(space.id):
        ev = item.event
        if ev.kind == "message" and ev.role == "user" and ev.text and not extra(ev).get("meta"):
            summary.pieces.append(_prompt(ev.text))
        elif ev.kind == "message" and ev.role == "assistant" and ev.text:
            summary.pieces.append(_assistant(ev.text))
        elif ev.kind == "compaction":
            epoch += 1
            summary.pieces.append(_boundary(epoch, ev.text or ""))
        elif ev.kind == "call":
            tool = ev.tool or "tool"
            pending[ev.call_ref or ""] = (tool, args_summary(tool, parse_args(ev.args)))
            for sub in space.by_call.get(ev.call_ref or "", []):  # under the call that started it
                summary.pieces.append(_agent_piece(sub.number, sub.info.row.title or "",
                                                   sub.info.row.results))  # fmt: skip
        elif ev.kind == "result":
            tool, said = pending.pop(ev.call_ref or "", (ev.tool or "tool", ""))
            if ev.rkind in EDIT_KINDS and ev.path:
                x = extra(ev)
                added, removed = x.get("added"), x.get("removed")
                changed = summary.files.setdefault(ev.path, _Changed())
                changed.edits += 1
                changed.added += added if isinstance(added, int) else 0
                changed.removed += removed if isinstance(removed, int) else 0
                piece, n = _diff(tool, ev.path, added if isinstance(added, int) else None,
                                 removed if isinstance(removed, int) else None, item,
                                 f"d-{ev.seq}")  # fmt: skip
                summary.diff_lines += n
                summary.pieces.append(piece)
            else:
                summary.pieces.append(_result(tool, said, item))
    for sub in space.orphans:
        summary.pieces.append(_agent_piece(sub.number, sub.info.row.title or "",
                                           sub.info.row.results))  # fmt: skip
    return summary


def _agent_piece(number: int, title: str, results: int) -> Piece:
    line = (
        f"- sub-agent {number}: {_prose(cut(' '.join(title.split()), 120))} · {results:,} results"
    )
    return Piece("agent", [line, ""], "sub-agents")


# The steps a summary is shortened by, in order, while it is too long: (kind, form). A step to
# a kind's "" form leaves out only as many of its pieces as needed, from the middle of the run.
STEPS = (("result", 1), ("assistant", 1), ("diff", 1), ("result", 2), ("prompt", 1),
         ("diff", 2), ("boundary", 1), ("assistant", 2), ("agent", 1), ("prompt", 2),
         ("boundary", 2), ("diff", 3), ("prompt", 3), ("result", 3), ("prompt", 4),
         ("boundary", 3))  # fmt: skip


def _choose(pieces: list[Piece], budget: int) -> tuple[list[int], dict[int, int]]:
    """Each piece's form (its index; past its last: left out), and the runs left out (the
    first piece of a run -> how many), for the whole to fit `budget` characters."""
    forms = [0] * len(pieces)
    by_kind: dict[str, list[int]] = {k: [] for k in ORDER}
    for i, p in enumerate(pieces):
        by_kind[p.kind].append(i)

    def size(i: int) -> int:
        if forms[i] >= len(pieces[i].forms):
            return 0
        form = pieces[i].forms[forms[i]]
        return len(form) + 2 if form else 0

    total = sum(size(i) for i in range(len(pieces)))
    gone: dict[int, int] = {}

    def drop_middle(kind: str, over: int, ends: int) -> int:
        """Leave out a run from the middle of `kind`'s pieces, as long as `over` needs, the
        first and last `ends` kept; what was saved."""
        mine = [i for i in by_kind[kind] if size(i)]
        if len(mine) <= 2 * ends:
            return 0
        lo = hi = len(mine) // 2
        saved = -_GAP
        while saved < over and (lo > ends or hi < len(mine) - ends):
            if hi < len(mine) - ends:
                saved += size(mine[hi])
                hi += 1
            if saved < over and lo > ends:
                lo -= 1
                saved += size(mine[lo])
        if hi <= lo:
            return 0
        for i in mine[lo:hi]:
            forms[i] = len(pieces[i].forms)
        gone[mine[lo]] = hi - lo
        return saved

    for kind, form in STEPS:
        if total <= budget:
            break
        if any(pieces[i].forms[-1] == "" and form >= len(pieces[i].forms) - 1
               for i in by_kind[kind][:1]):  # fmt: skip
            total -= drop_middle(kind, total - budget, 3)
            continue
        for i in by_kind[kind]:
            before = size(i)
            forms[i] = min(form, len(pieces[i].forms) - 1)
            total += size(i) - before
    # Every form its shortest and still too long: runs of each kind go, its first and last
    # three kept; then, should even that be too long, those too.
    for ends in (3, 0):
        for kind in ORDER:
            if total <= budget:
                break
            total -= drop_middle(kind, total - budget, ends)
    return forms, gone


_GAP = 80  # the length of the line that says how many pieces a run left out


def write(source: Source, plan: Plan, out: Path, limit: int = GITHUB) -> tuple[list[Path], Tally]:
    """The summary of plan's session into `out`, in fewer than `limit` characters."""
    row = plan.main.info.row
    summary = gather(source, plan)
    tally = Tally(source.redactor.enabled)
    title = " ".join((row.title or row.id).split())
    head = (
        f"# {_HTML_START.sub('&lt;', cut(title, 200))}\n\n"
        f"`{row.id}` · {row.source} · {row.results:,} results · {row.compactions} "
        f"compactions · {len(plan.spaces)} sub-agents · {_when(row.started)}\n\n"
    )
    files = _files(summary)
    footer_room = 1_500  # the note of what was left out, the footer, the lines saying what went
    budget = limit - 1 - len(head) - len(files) - footer_room
    if budget < 0:  # a title and a list of files past the limit: the list goes
        files = f"{len(summary.files):,} files changed (too many to list here).\n\n"
        budget = limit - 1 - len(head) - len(files) - footer_room
    forms, gone = _choose(summary.pieces, budget)
    body: list[str] = []
    skipped: Counter[str] = Counter()
    shortened: Counter[str] = Counter()
    names = {"result": "results", "assistant": "assistant messages", "agent": "sub-agents",
             "diff": "diffs", "boundary": "compaction boundaries", "prompt": "prompts"}  # fmt: skip
    for i, p in enumerate(summary.pieces):
        if i in gone:
            body.append(f"*… {gone[i]:,} {names[p.kind]} left out here, to fit …*")
        if forms[i] >= len(p.forms) or not p.forms[forms[i]]:
            skipped[p.kind] += 1
            continue
        if forms[i]:
            shortened[p.kind] += 1
        body.append(p.forms[forms[i]])
    note = _note(summary, skipped, shortened, limit)
    text = head + note + files + "## The session\n\n" + "\n\n".join(body) + "\n"
    for part in (head, note, files, *body):
        tally.add(part)
    text += f"\n---\n\n{tally.note()}. Exported by ctxview on {_when(time.time())}.\n"
    assert len(text) < limit, len(text)  # the budget's rooms are generous: never past it
    out.write_text(text, encoding="utf-8")
    return [out], tally


def _files(summary: Summary) -> str:
    if not summary.files:
        return ""
    ranked = sorted(summary.files.items(), key=lambda kv: -(kv[1].added + kv[1].removed))
    lines = [f"## Files changed ({len(ranked):,})\n"]
    for path, c in ranked[:FILES_LISTED]:
        lines.append(f"- {_code(cut(path, 160))}: {c.edits} edit{'s' * (c.edits != 1)}, "
                     f"+{c.added} −{c.removed}")  # fmt: skip
    if len(ranked) > FILES_LISTED:
        lines.append(f"- … and {len(ranked) - FILES_LISTED:,} more, with fewer lines changed")
    return "\n".join(lines) + "\n\n"


def _note(summary: Summary, skipped: Counter[str], shortened: Counter[str], limit: int) -> str:
    """What the summary leaves out, in a sentence or two."""
    kinds = {p.kind for p in summary.pieces}
    parts = ["every result's text after its first line"] if "result" in kinds else []
    if "agent" in kinds:
        parts.append("what the sub-agents did")
    names = {"result": "results", "assistant": "assistant messages", "agent": "sub-agents",
             "diff": "diffs", "boundary": "compaction boundaries", "prompt": "prompts"}  # fmt: skip
    parts += [f"{skipped[k]:,} {names[k]}" for k in ORDER if skipped[k]]
    cuts = [f"{shortened[k]:,} {names[k]}" for k in ("prompt", "boundary", "diff")
            if shortened[k]]  # fmt: skip
    said = (f"> A summary that fits in {limit:,} characters (a GitHub comment): the prompts, "
            "the compaction boundaries, the files changed with their diffs, each result by its "
            "first line. ")  # fmt: skip
    if parts:
        said += "Left out: " + "; ".join(parts) + ". "
    if cuts:
        said += "Cut short: " + "; ".join(cuts) + ". "
    said += "`ctxview export --format md` writes all of it.\n\n"
    return said


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts)) if ts else "—"
