"""A session as one self-contained HTML file (or pages and an index, past a size), written as
it is read: a range of events at a time, so memory stays flat for 100,000 results.

Everything is inline (styles, a few lines of script, system fonts), nothing is fetched, and a
Content-Security-Policy forbids fetching. Untrusted text (results, messages, titles) is always
escaped; messages go through Markdown with raw HTML off and images off.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
import traceback
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

from pygments import highlight as pyg_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer

from ctxview.export.lexers import lexer_class
from ctxview.export.plan import EDIT_KINDS, STUB_KINDS, Plan, Space
from ctxview.export.source import Item, Source, extra
from ctxview.export.style import SCRIPT, css
from ctxview.export.tally import MARKER, Tally
from ctxview.export.text import (
    ANSI,
    ELISION,
    attr,
    count_lines,
    cut,
    esc,
    files_read_rows,
    link_ids,
)
from ctxview.report.call_summary import args_summary, parse_args
from ctxview.rules.brackets import file_sections
from ctxview.store.records import Event, SessionRow

FOLD_AT = 24  # a result of more lines is folded ...
FOLD_SHOW = 10  # ... showing this many
MESSAGE_FOLD = 80  # a message of more lines is folded whole
MAX_SHOWN_CHARS = 2_000_000  # of one result's text on the page; the rest: `ctxview recall`
MIDDLE_CHARS = 1_000_000  # of an elided middle shown in place
HIGHLIGHT_CHARS = 200_000  # bodies longer than this are not coloured
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:; font-src data:")  # fmt: skip


@dataclass
class Ctx:
    """Where a piece of HTML is being written: which session's ids, after which boundary."""

    space: Space
    epoch: int


class PageNames:
    def __init__(self, out: Path, pages: int) -> None:
        self.out = out
        self.pages = pages
        stem = out.name[:-5] if out.name.endswith(".html") else out.name
        self.stem = stem

    def name(self, page: int) -> str:
        if self.pages == 1:
            return self.out.name
        return f"{self.stem}.p{page + 1:03d}.html"

    def path(self, page: int) -> Path:
        return self.out.with_name(self.name(page))


# Links


def href(space: Space, rid: int) -> str:
    """A result's link as the blocks are made: its anchor between NULs, resolved once the pages
    are known (`#1005`, or `s.p003.html#1005`). Text never holds a NUL: esc() replaces it."""
    return f"\x00{space.anchor(rid)}\x00"


def id_link(ctx: Ctx, rid: int, label: str, space: Space | None = None) -> str:
    space = space or ctx.space
    where = space.epoch_of.get(rid)
    owner = space.holder(rid) or space
    url = href(owner, rid)  # a sub-agent's or its parent's id: where that result is
    if where is not None and where < ctx.epoch:
        return (f'<a class="id stale" href="{url}">{esc(label)}</a>'
                f'<span class="note"> (not in context since boundary {where + 1})</span>')  # fmt: skip
    return f'<a class="id" href="{url}">{esc(label)}</a>'


def linked(ctx: Ctx, text: str) -> str:
    """Escaped text with every id of the session a link."""
    space = ctx.space
    return link_ids(text, lambda rid: space.holder(rid) is not None,
                    lambda rid, label: id_link(ctx, rid, label), esc)  # fmt: skip


# Markdown (messages, summaries): raw HTML and images off, ids linked in text and code.


@cache
def _md() -> Any:
    from markdown_it import MarkdownIt  # imported when a message first needs it (30 ms)
    from markdown_it.renderer import RendererHTML

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable(["html_inline", "html_block"])
    assert isinstance(md.renderer, RendererHTML)  # the default; its rules are what is replaced
    # Hinted as bound methods; markdown-it calls any rule as rule(tokens, idx, options, env).
    rules: dict[str, Any] = md.renderer.rules

    def image(tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
        # Never fetched (the policy forbids it): the image is named, and linked when its address
        # is one a link may have. (With the image rule off, `![alt](x)` left a stray "!".)
        token = tokens[idx]
        alt = "".join(t.content for t in token.children or []) or "image"
        src = str(token.attrGet("src") or "")
        label = f'<span class="dim">image:</span> {linked(env["ctx"], alt)}'
        if src and md.validateLink(src):
            return f'<a class="image" href="{attr(src)}">{label}</a>'
        return label

    rules["image"] = image

    def text(tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
        return linked(env["ctx"], tokens[idx].content)

    def code_inline(tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
        return f"<code>{linked(env['ctx'], tokens[idx].content)}</code>"

    def fence(tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
        token = tokens[idx]
        code = token.content
        body = linked(env["ctx"], code)
        lang = token.info.split(maxsplit=1)[0] if token.info.strip() else ""
        # Coloured in its language unless an id in it is a link (the links win).
        colour = _fence_colour(code, lang) if lang and body == esc(code) else None
        if colour is not None:
            return f'<pre class="hl"><code>{colour}</code></pre>\n'
        return f"<pre><code>{body}</code></pre>\n"

    rules["text"] = text
    rules["code_inline"] = code_inline
    rules["fence"] = fence
    rules["code_block"] = fence
    return md


# Text with none of Markdown's marks renders as itself in one paragraph: skip the parser (a
# tenth of the cost; most of a long session's messages are plain sentences).
_MD_MARKS = re.compile(r"[*_`\[\]<>!|~\\&]|^\s*(?:[-+>#=]|\d+[.)])|\n\s*\n|^ {4}|\t", re.M)


# A redaction marker is text, not Markdown (`[redacted: x](…)` would make a link of it): each
# is swapped for a stand-in of private-use characters before rendering and put back after.
_STAND_IN = re.compile("\ue000(\\d+)\ue001")


def markdown(ctx: Ctx, text: str) -> str:
    markers: list[str] = []
    if "[redacted: " in text:

        def keep(m: re.Match[str]) -> str:
            markers.append(m.group(0))
            return f"\ue000{len(markers) - 1}\ue001"

        text = MARKER.sub(keep, text)
    if not _MD_MARKS.search(text):
        out = f"<p>{linked(ctx, text)}</p>\n"
    else:
        try:
            out = _md().render(text, {"ctx": ctx})
        except RecursionError:  # pathological nesting: show it as text
            out = f"<pre>{linked(ctx, text)}</pre>"
    return _STAND_IN.sub(lambda m: markers[int(m.group(1))], out) if markers else out


# Colour


@cache
def _lexer(name: str) -> Lexer | None:
    cls = lexer_class(name)  # pygments' choice, without its lookup's start-up cost
    if cls is None or cls.name == "Text only":
        return None
    return cls(stripnl=False, ensurenl=False)


@cache
def _fence_lexer(name: str) -> Lexer | None:
    """The lexer a code fence's language names (```python, ```ts), or None."""
    from pygments.lexers import find_lexer_class_by_name
    from pygments.util import ClassNotFound

    try:
        cls = find_lexer_class_by_name(name.lower())
    except ClassNotFound:
        return None
    if cls.name == "Text only":
        return None
    return cls(stripnl=False, ensurenl=False)


# Token spans only: the page's CSS colours them under `pre.hl` (style.py), for either scheme.
_FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(lines: list[str], lexer: Lexer) -> list[str]:
    out = pyg_highlight("\n".join(lines) + "\n", lexer, _FORMATTER).split("\n")
    out = (out + [""] * len(lines))[: len(lines)]
    # A line that holds a redaction marker is shown plain: token spans would cut it in pieces.
    return [esc(line) if "[redacted: " in line else o for line, o in zip(lines, out, strict=True)]


def coloured(lines: list[str], path: str | None) -> list[str] | None:
    """Each line as HTML coloured for `path`'s language; None when there is no lexer. Goes in a
    `<pre class="hl">`: the token colours apply only there."""
    if not path or sum(map(len, lines)) > HIGHLIGHT_CHARS:
        return None
    lexer = _lexer(path.rsplit("/", 1)[-1])
    if lexer is None:
        return None
    return _highlight(lines, lexer)


def _fence_colour(code: str, lang: str) -> str | None:
    if len(code) > HIGHLIGHT_CHARS:
        return None
    lexer = _fence_lexer(lang)
    if lexer is None:
        return None
    lines = code.removesuffix("\n").split("\n")
    return "\n".join(_highlight(lines, lexer)) + ("\n" if code.endswith("\n") else "")


# Results


def _plain_lines(ctx: Ctx, lines: list[str], css_class: str = "") -> str:
    text = "\n".join(lines)
    if "\x1b" in text:
        text = ANSI.sub("", text)
    body = linked(ctx, text)
    return f'<span class="{css_class}">{body}</span>' if css_class else body


def _read_lines(ctx: Ctx, lines: list[str], path: str | None) -> str:
    numbers, code = [], []
    for line in lines:
        head, sep, rest = line.partition(": ")
        if sep and head.isdigit():
            numbers.append(head + sep)
            code.append(rest)
        else:
            numbers.append("")
            code.append(line)
    colour = coloured(code, path)
    if colour is None:
        return _plain_lines(ctx, lines)
    return "\n".join(
        f'<span class="ln">{n}</span>{c}' for n, c in zip(numbers, colour, strict=True)
    )


def _diff_lines(ctx: Ctx, lines: list[str], path: str | None) -> str:
    out: list[str] = []
    for header, file_path, section in file_sections(lines, path):
        if header is not None:
            out.append(f'<span class="df">{linked(ctx, header)}</span>')
        if not section:
            continue
        code = [ln[1:] if ln[:1] in "+- " and ln else "" for ln in section]
        colour = coloured(code, file_path) or [esc(c) for c in code]
        for ln, c in zip(section, colour, strict=True):
            if ln.startswith("@@"):
                out.append(f'<span class="dh">{esc(ln)}</span>')
            elif ln[:1] == "+":
                out.append(f'<span class="da"><span class="m">+</span>{c}</span>')
            elif ln[:1] == "-":
                out.append(f'<span class="dr"><span class="m">-</span>{c}</span>')
            elif ln[:1] == " ":
                out.append(f" {c}")
            else:
                out.append(linked(ctx, ln))
    return "\n".join(out)


def _segment(ctx: Ctx, ev: Event, lines: list[str]) -> str:
    """A run of a result's lines as a `<pre>`: diffs and reads in their file's language."""
    if not lines:
        return "<pre></pre>"
    if ev.rkind in EDIT_KINDS:
        return f'<pre class="hl">{_diff_lines(ctx, lines, ev.path)}</pre>'
    if ev.tool == "read" and ev.rkind in ("full", "unchanged"):
        return f'<pre class="hl">{_read_lines(ctx, lines, ev.path)}</pre>'
    if ev.rkind == "error":
        return f"<pre>{_plain_lines(ctx, lines, 'err')}</pre>"
    return f"<pre>{_plain_lines(ctx, lines)}</pre>"


def _elision(ctx: Ctx, line: str, n: int, index: int, stored: str | None) -> str:
    head = linked(ctx, line)
    if stored is None:
        return f'<pre class="elision">{head}</pre>'
    middle = _nth_lines(stored, index, n)
    more = ""
    if len(middle) > MIDDLE_CHARS:
        cut = middle.rfind("\n", 0, MIDDLE_CHARS)
        rest = middle[cut + 1 :].count("\n") + 1
        middle = middle[:cut]
        ref = line.rsplit(" ", 1)[-1].rstrip("]")
        more = (f'\n<span class="note">… {rest:,} more lines: <code>ctxview recall {esc(ref)}'
                "</code> shows all of them</span>")  # fmt: skip
    body = esc(ANSI.sub("", middle) if "\x1b" in middle else middle)
    return (f'<details class="elision"><summary>{head} <span class="dim">— the {n:,} '
            f'lines, from the stored text</span></summary><pre>{body}{more}</pre></details>')  # fmt: skip


def _nth_lines(text: str, index: int, n: int) -> str:
    """Lines index..index+n-1 of text, without splitting more of it than that. A capped
    result's middle ends a few lines before the text does: found from both ends."""
    if n <= 0:
        return ""
    total = text.count("\n") + 1
    tail = total - index - n
    if 0 <= tail <= 64 and index <= 64:
        start = 0
        for _ in range(index):
            start = text.find("\n", start) + 1
        end = len(text)
        for _ in range(tail):
            end = text.rfind("\n", 0, end)
        return text[start:end]
    if index + n < 20_000:
        parts = text.split("\n", index + n)
        return "\n".join(parts[index : index + n])
    start = 0
    for _ in range(index):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    end = start
    for _ in range(n):
        nxt = text.find("\n", end)
        if nxt < 0:
            return text[start:]
        end = nxt + 1
    return text[start : end - 1]


def _body_html(ctx: Ctx, item: Item, lines: list[str], offset: int) -> str:
    """Lines of a result's body (from line `offset` of it), elision lines opened in place."""
    ev = item.event
    parts: list[str] = []
    run: list[str] = []
    for i, line in enumerate(lines):
        m = ELISION.match(line) if line.startswith("[") else None
        if m is None:
            run.append(line)
            continue
        if run:
            parts.append(_segment(ctx, ev, run))
            run = []
        parts.append(_elision(ctx, line, int(m.group(1)), offset + i, item.stored))
    if run:
        parts.append(_segment(ctx, ev, run))
    return "".join(parts)


def result_html(ctx: Ctx, item: Item) -> str:
    ev = item.event
    space = ctx.space
    shown = item.shown if item.shown is not None else ""
    bracket, _, body = shown.partition("\n")
    kind = "stub" if ev.rkind in STUB_KINDS else ev.rkind if ev.rkind in ("recall", "error") else ""
    anchor = f' id="{space.anchor(ev.rid)}"' if ev.rid is not None else ""
    out = [f'<div class="bracket {kind}"{anchor}>{linked(ctx, bracket)}']
    if ev.rkind in STUB_KINDS and ev.points_to is not None and ev.points_to in space.epoch_of:
        # What the stub stands for, linked (the viewer's "↵ leads to" names a key: no key here).
        out.append(f' <span class="dim">stands for</span> '
                   f'{id_link(ctx, ev.points_to, space.ref(ev.points_to))}')  # fmt: skip
    out.append("</div>")
    truncated = ""
    if len(body) > MAX_SHOWN_CHARS:
        cut = body.rfind("\n", 0, MAX_SHOWN_CHARS)
        rest = count_lines(body[cut + 1 :])
        body = body[: max(cut, 0)]
        truncated = (f'<p class="note">… {rest:,} more lines; <code>ctxview recall '
                     f'{esc(space.ref(ev.rid or 0))}</code> shows all of them.</p>')  # fmt: skip
    if body:
        lines = body.split("\n")
        if len(lines) > FOLD_AT:
            out.append(_body_html(ctx, item, lines[:FOLD_SHOW], 0))
            out.append(f'<details class="more"><summary>+{len(lines) - FOLD_SHOW:,} lines'
                       f"</summary>{_body_html(ctx, item, lines[FOLD_SHOW:], FOLD_SHOW)}"
                       "</details>")  # fmt: skip
        else:
            out.append(_body_html(ctx, item, lines, 0))
    out.append(truncated)
    if ev.rid is not None and ev.rid in space.pointed_by:
        refs = ", ".join(id_link(ctx, r, space.ref(r)) for r in space.pointed_by[ev.rid])
        out.append(f'<div class="pointers">stubs and recalls of it: {refs}</div>')
    return "".join(out)


def call_html(ctx: Ctx, call: Event | None, result: Event | None) -> str:
    ev = call or result
    assert ev is not None
    tool = ev.tool or "tool"
    args = parse_args(call.args) if call else {}
    summary = args_summary(tool, args) if call else ""
    out = [f'<div class="call"><span class="tname">▸ {esc(tool)}</span> {linked(ctx, summary)}']
    if result is not None and result.rkind in EDIT_KINDS:
        x = extra(result)
        if isinstance(x.get("added"), int) and isinstance(x.get("removed"), int):
            out.append(f' <span class="stat"><span class="add">+{x["added"]}</span> '
                       f'<span class="rem">−{x["removed"]}</span></span>')  # fmt: skip
    for sub in ctx.space.by_call.get(ev.call_ref or "", []):
        out.append(f' <a href="#{sub.agent_anchor}">→ sub-agent {sub.number}</a>')
    out.append("</div>")
    if call and call.args and (len(call.args) > 120 or "\\n" in call.args):
        pretty = json.dumps(args, indent=2, ensure_ascii=False)
        out.append(f"<details class=\"more\"><summary>arguments</summary><pre>{linked(ctx, pretty)}"
                   "</pre></details>")  # fmt: skip
    return "".join(out)


# Messages, boundaries, other events


def _usage(x: dict[str, Any]) -> str:
    usage = x.get("usage")
    if not isinstance(usage, dict):
        return ""
    parts = [f"{k.removesuffix('_tokens').replace('_', ' ')} {v:,}"
             for k, v in usage.items() if isinstance(v, int)]  # fmt: skip
    return f'<span class="usage">{esc(" · ".join(parts))}</span>' if parts else ""


def message_html(ctx: Ctx, ev: Event, anchor: str) -> str:
    role = ev.role or "message"
    x = extra(ev)
    text = ev.text or ""
    who = f'<div class="who {attr(role)}">● {esc(role)}{_usage(x)}</div>'
    thinking = ""
    if isinstance(x.get("thinking"), str) and x["thinking"]:
        thinking = (f'<details class="thinking"><summary>✻ thinking</summary>'
                    f'<div class="md">{markdown(ctx, x["thinking"])}</div></details>')  # fmt: skip
    body = f'<div class="md">{markdown(ctx, text)}</div>' if text else ""
    n = count_lines(text)
    if n > MESSAGE_FOLD:
        first = esc(cut(text.split("\n", 1)[0], 200))
        body = f'<details class="more"><summary>{first} … ({n:,} lines)</summary>{body}</details>'
    return f'<section class="msg {attr(role)}" id="{anchor}">{who}{thinking}{body}</section>'


def boundary_html(ctx: Ctx, ev: Event, number: int, anchor: str) -> str:
    x = extra(ev)
    out = [f'<section class="boundary" id="{anchor}"><h2>━━ compaction {number} ━━</h2>',
           f'<div class="md">{markdown(ctx, ev.text or "")}</div>']  # fmt: skip
    rows = files_read_rows(x)
    if rows:
        out.append('<table class="files"><caption>Files read before this summary</caption>'
                   "<tr><th>path</th><th>lines</th><th>sha</th><th>result</th></tr>")  # fmt: skip
        for path, span, sha, rid in rows:
            link = ""
            if rid is not None:
                label = ctx.space.ref(rid)
                link = id_link(ctx, rid, label) if rid in ctx.space.epoch_of else esc(label)
            out.append(f"<tr><td>{esc(path)}</td><td>{esc(span)}</td>"
                       f"<td class=\"mono\">{esc(sha)}</td><td>{link}</td></tr>")  # fmt: skip
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def event_html(ctx: Ctx, ev: Event) -> str:
    x = extra(ev)
    if ev.kind == "end":
        return '<div class="event">■ the session ended</div>'
    if ev.kind == "usage" and isinstance(x.get("usage"), dict):
        return f'<div class="event">usage {_usage(x)}</div>'
    if ev.kind == "elide" and isinstance(x.get("rids"), list):
        rids = [r for r in x["rids"] if isinstance(r, int)]
        links = ", ".join(id_link(ctx, r, ctx.space.ref(r)) if r in ctx.space.epoch_of
                          else esc(ctx.space.ref(r)) for r in rids)  # fmt: skip
        return (f'<div class="event">✂ {len(rids)} older results now go to the model as '
                f"stubs: {links}</div>")  # fmt: skip
    if ev.kind == "compact_due":
        return (f'<div class="event">⚑ compaction due: {esc(str(x.get("tokens")))} tokens, '
                f'above {esc(str(x.get("above_tokens")))}</div>')  # fmt: skip
    what = ev.text or ev.tool or ""
    return f'<div class="event">‹{esc(ev.kind)}› {linked(ctx, cut(what, 500))}</div>'


# Page frame


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts)) if ts else "—"


def facts_html(row: SessionRow, agents: int) -> str:
    facts = [("session", row.id), ("source", row.source), ("workspace", row.workspace or "—"),
             ("started", _when(row.started)),
             ("ended", _when(row.ended) if row.ended else "live (still being written)"),
             ("results", f"{row.results:,}"), ("compactions", f"{row.compactions:,}"),
             ("characters", f"{row.chars_shown:,} shown to the model, {row.chars_stored:,} "
                            f"stored, {row.chars_saved:,} saved")]  # fmt: skip
    if agents:
        facts.append(("sub-agents", str(agents)))
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    return f'<dl class="facts">{items}</dl>'


def head(title: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="ctxview export">'
        f"<title>{esc(title)}</title><style>{css()}</style></head><body>\n"
    )


def tail() -> str:
    return f"<script>{SCRIPT}</script></body></html>\n"


def toc_html(plan: Plan, names: PageNames, current: int | None) -> str:
    if not plan.toc:
        return ""
    items = []
    for entry in plan.toc:
        anchor = f"b-{entry.number}" if entry.kind == "boundary" else f"m-{entry.seq}"
        url = f"#{anchor}" if entry.page == current else f"{names.name(entry.page)}#{anchor}"
        label = f"━ {entry.label}" if entry.kind == "boundary" else entry.label
        items.append(f'<li class="{entry.kind}"><a href="{attr(url)}">{esc(label)}</a></li>')
    return (f'<nav class="toc"><details open><summary>Contents: the prompts and the compaction '
            f"boundaries</summary><ol>{''.join(items)}</ol></details></nav>")  # fmt: skip


def pages_nav(names: PageNames, page: int, index_name: str) -> str:
    if names.pages == 1:
        return ""
    prev = f'<a href="{names.name(page - 1)}">← page {page}</a>' if page else "<span></span>"
    nxt = (f'<a href="{names.name(page + 1)}">page {page + 2} →</a>'
           if page + 1 < names.pages else "<span></span>")  # fmt: skip
    return (f'<nav class="pages">{prev}<a href="{attr(index_name)}">index</a>'
            f"<span>page {page + 1} of {names.pages}</span>{nxt}</nav>")  # fmt: skip


# The writer
#
# A session's blocks are made once, into a spool file, with each link to a result written as
# `\x00anchor\x00` (which page the result lands on is not known yet); then the pages are cut
# from the blocks' real sizes, so a page stays within --page-mb (a block larger than that gets
# a page of its own, which says so), and written with each link resolved: `#1005` on the same
# page, `s.p003.html#1005` on another. A long session's blocks are made by two processes, the
# first half and the rest; the pages are the same bytes either way.

_LINK = re.compile(b"\x00([^\x00]*)\x00")
_BRACKET_ID = re.compile(r'<div class="bracket[^"]*" id="([^"]+)"')
_MAIN_RID = re.compile(r"[0-9a-f]+")
_FOOTER_ROOM = 1_500  # bytes kept for a page's footer (what it holds of redactions, the stamp)
_LAST = 1 << 62  # the seq of the block of sub-agents that no call holds, after every other


class _Blocks:
    """The blocks one process made, in order, and where each is in its spool file."""

    def __init__(self) -> None:
        self.seqs = array("q")
        self.offsets = array("q")
        self.lengths = array("q")
        self.links = array("q")  # placeholders in the block
        self.anchors: dict[str, int] = {}  # a result's anchor -> its block
        self.rids: dict[int, tuple[int, int]] = {}  # block -> (first, last) main result id
        self.size = 0

    def add(self, spool: IO[bytes], seq: int, html: str) -> None:
        data = html.encode("utf-8", "surrogatepass")
        n = len(self.seqs)
        self.seqs.append(seq)
        self.offsets.append(self.size)
        self.lengths.append(len(data))
        self.links.append(data.count(0) // 2)
        spool.write(data)
        self.size += len(data)
        first = last = None
        for m in _BRACKET_ID.finditer(html):
            anchor = m.group(1)
            self.anchors[anchor] = n
            if _MAIN_RID.fullmatch(anchor):
                rid = int(anchor, 16)
                first = rid if first is None else first
                last = rid
        if first is not None and last is not None:
            self.rids[n] = (first, last)

    def state(self) -> dict[str, Any]:
        return {"seqs": self.seqs.tolist(), "offsets": self.offsets.tolist(),
                "lengths": self.lengths.tolist(), "links": self.links.tolist(),
                "anchors": self.anchors, "rids": {str(k): v for k, v in self.rids.items()},
                "size": self.size}  # fmt: skip

    @classmethod
    def of(cls, state: dict[str, Any]) -> _Blocks:
        b = cls()
        b.seqs, b.offsets = array("q", state["seqs"]), array("q", state["offsets"])
        b.lengths, b.links = array("q", state["lengths"]), array("q", state["links"])
        b.anchors = state["anchors"]
        b.rids = {int(k): (v[0], v[1]) for k, v in state["rids"].items()}
        b.size = state["size"]
        return b


@dataclass
class _Page:
    blocks: list[tuple[int, int]]  # (part, block) in order
    oversized: int = 0  # the bytes of its one block, when that is past the limit


class HtmlExport:
    """Writes a session's plan out: its blocks into a spool, then the pages cut from them."""

    def __init__(self, source: Source, plan: Plan, out: Path, page_bytes: int | None) -> None:
        self.source = source
        self.plan = plan
        self.out = out
        self.page_bytes = page_bytes
        self.names = PageNames(out, 1)
        self.files: list[Path] = []
        self.sizes: list[int] = []
        self.held = Tally(source.redactor.enabled)  # what every file written holds, summed
        self.parts: list[tuple[IO[bytes], _Blocks]] = []

    # making the blocks

    def run(self, workers: int = 1) -> list[Path]:
        """The blocks (in two processes when `workers` is 2 and the plan found a half), then
        the pages and their index."""
        try:
            if workers > 1 and self.plan.split is not None and hasattr(os, "fork"):
                self._make_forked()
            else:
                spool = self._spool()
                self.parts = [(spool, _Blocks())]
                self.parts = [(spool, self._make(None, None, spool))]
            self._write_pages(self._place())
        finally:
            for spool, _ in self.parts:
                spool.close()
        return self.files

    def _spool(self) -> IO[bytes]:
        # Beside the output (a temporary folder may be small or in memory), gone when closed.
        return tempfile.TemporaryFile(dir=self.out.parent, prefix=".ctxview-export-")

    def _make(self, first: int | None, stop: int | None, spool: IO[bytes]) -> _Blocks:
        """The main session's blocks from seq `first` (the second half) or from its start up
        to seq `stop` (the first half), then, after the last, the sub-agents no call holds."""
        plan = self.plan
        blocks = _Blocks()
        after = first - 1 if first else 0
        skip = plan.open_at_split if first else frozenset()
        epoch = sum(1 for e in plan.toc if e.kind == "boundary" and first and e.seq < first)
        for seq, html in self._blocks(plan.main, after=after, stop=stop, skip=skip, epoch=epoch):
            blocks.add(spool, seq, html)
        if stop is None and plan.main.orphans:
            parts = ['<section class="orphans"><h2>Sub-agents</h2>']
            for sub in plan.main.orphans:
                parts.extend(self._agent(sub, None))
            parts.append("</section>")
            blocks.add(spool, _LAST, "".join(parts))
        spool.flush()
        return blocks

    def _make_forked(self) -> None:
        """The first half's blocks in one child, the rest in another, each on its own
        connection and into its own spool; their tables come back through pipes."""
        split = self.plan.split
        assert split is not None
        spools = [self._spool(), self._spool()]
        pipes = [os.pipe(), os.pipe()]
        pids: list[int] = []
        got: list[dict[str, Any]] = [{}, {}]
        try:
            for part in (0, 1):
                pid = os.fork()
                if pid == 0:  # the child: its blocks, its table, then gone without cleanup
                    code = 1
                    try:
                        # Only its own pipe's write end stays open: another end held here
                        # would keep the parent waiting for an end of file that never comes.
                        for n, (r, w) in enumerate(pipes):
                            os.close(r)
                            if n != part:
                                os.close(w)
                        self.source = Source(self.source.path, self.source.redactor)
                        blocks = (self._make(None, split, spools[0]) if part == 0
                                  else self._make(split, None, spools[1]))  # fmt: skip
                        _send(pipes[part][1], blocks.state())
                        code = 0
                    except BaseException:
                        traceback.print_exc()
                    finally:
                        os._exit(code)
                pids.append(pid)
            for _, w in pipes:
                os.close(w)
            got = [_receive(r) for r, _ in pipes]
        finally:
            for r, w in pipes:
                for fd in (r, w):
                    with contextlib.suppress(OSError):
                        os.close(fd)
            codes = [os.waitpid(pid, 0)[1] for pid in pids]
        self.parts = [(spools[0], _Blocks()), (spools[1], _Blocks())]
        if len(pids) < 2 or any(codes) or not all(got):
            raise RuntimeError("An export process failed; its error is above.")
        self.parts = [(spools[0], _Blocks.of(got[0])), (spools[1], _Blocks.of(got[1]))]

    # cutting the pages

    def _frame(self, page: int, pages: int) -> int:
        """The bytes of a page other than its blocks, at most (its title, header, navigation,
        contents on a single page, footer)."""
        row = self.plan.main.info.row
        title = row.title or row.id
        big = 10 ** max(4, len(str(pages)))  # page numbers' digits, at most
        names = PageNames(self.out, big)
        parts = [head(title + f" — page {big} of {big}"), self._header(page, pages),
                 2 * pages_nav(names, min(page, big - 2), self.out.name) if pages > 1 else "",
                 "<main>\n</main>", tail(), self._oversized_note(10**12)]  # fmt: skip
        if pages == 1:
            parts.append(toc_html(self.plan, PageNames(self.out, 1), 0))
        return sum(len(p.encode()) for p in parts) + _FOOTER_ROOM

    def _place(self) -> list[_Page]:
        """The pages: blocks in order, a page closed when the next block would take it past
        the limit; a block past it alone on a page. Sizes count each link at its longest."""
        order = [
            (p, i) for p, (_, blocks) in enumerate(self.parts) for i in range(len(blocks.seqs))
        ]
        longest = len(PageNames(self.out, 10**6).name(10**6 - 1).encode())
        sizes = [blocks.lengths[i] + blocks.links[i] * longest
                 for p, i in order for blocks in (self.parts[p][1],)]  # fmt: skip
        limit = self.page_bytes
        if limit is None or sum(sizes) + self._frame(0, 1) <= limit:
            return [_Page(order)]
        pages: list[_Page] = []
        current: list[tuple[int, int]] = []
        used = 0
        room = limit - self._frame(0, 2)
        for at, size in zip(order, sizes, strict=True):
            if current and used + size > room:
                pages.append(_Page(current))
                current, used = [], 0
                room = limit - self._frame(len(pages), 2)
            if not current and size > room:
                pages.append(_Page([at], size))  # past the limit alone: a page of its own
                room = limit - self._frame(len(pages), 2)
                continue
            current.append(at)
            used += size
        if current or not pages:
            pages.append(_Page(current))
        return pages

    # writing the pages

    def _header(self, page: int, pages: int) -> str:
        row = self.plan.main.info.row
        out = [f'<header class="top"><h1>{esc(row.title or row.id)}</h1>']
        if page == 0:
            out.append(facts_html(row, len(self.plan.spaces)))
            if pages == 1:
                out.append('<p class="dim">Secrets: <a href="#redactions">what was redacted</a>'
                           " is at the end.</p>")  # fmt: skip
        out.append("</header>")
        return "".join(out)

    def _oversized_note(self, size: int) -> str:
        limit = self.page_bytes or 0
        return (f'<p class="note">This page is one block of {size / 1e6:.2f} MB, more than the '
                f"{limit / 1e6:g} MB a page may hold: a block is not split.</p>")  # fmt: skip

    def _write_pages(self, pages: list[_Page]) -> None:
        plan = self.plan
        self.names = names = PageNames(self.out, len(pages))
        where: dict[str, int] = {}  # anchor -> page
        first_seq: dict[int, int] = {}  # a block's first seq -> its page
        spans: list[tuple[int | None, int | None]] = []
        for n, page in enumerate(pages):
            first = last = None
            for p, i in page.blocks:
                blocks = self.parts[p][1]
                first_seq[blocks.seqs[i]] = n
                if i in blocks.rids:
                    lo, hi = blocks.rids[i]
                    first = lo if first is None else first
                    last = hi
            spans.append((first, last))
        for p, (_, blocks) in enumerate(self.parts):
            page_of_block = {i: n for n, page in enumerate(pages) for q, i in page.blocks if q == p}
            for anchor, i in blocks.anchors.items():
                where[anchor] = page_of_block.get(i, 0)
        for entry in plan.toc:
            entry.page = first_seq.get(entry.seq, 0)
        for n, page in enumerate(pages):
            self._write_page(n, page, names, where)
        if len(pages) > 1:
            self._write_index(spans)

    def _write_page(self, n: int, page: _Page, names: PageNames, where: dict[str, int]) -> None:
        plan = self.plan
        row = plan.main.info.row
        title = row.title or row.id
        total = names.pages
        path = names.path(n)
        tally = Tally(self.held.redacted)

        def resolve(m: re.Match[bytes]) -> bytes:
            anchor = m.group(1).decode()
            target = where.get(anchor, n)
            return (f"#{anchor}" if target == n else f"{names.name(target)}#{anchor}").encode()

        self.files.append(path)
        written = 0
        with open(path, "wb") as f:

            def w(text: str | bytes) -> None:
                nonlocal written
                data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
                if b"[redacted: " in data:
                    tally.add(data.decode("utf-8", "surrogatepass"))
                f.write(data)
                written += len(data)

            w(head(title + (f" — page {n + 1} of {total}" if total > 1 else "")))
            w(self._header(n, total))
            w(pages_nav(names, n, self.out.name))
            if total == 1:
                w(toc_html(plan, names, 0))
            w("<main>\n")
            if page.oversized:
                w(self._oversized_note(page.oversized))
            for p, i in page.blocks:
                spool, blocks = self.parts[p]
                spool.seek(blocks.offsets[i])
                data = spool.read(blocks.lengths[i])
                w(_LINK.sub(resolve, data) if blocks.links[i] else data)
            w("</main>")
            w(pages_nav(names, n, self.out.name))
            w(
                f'<footer id="redactions"><p>{esc(tally.note("this page"))}.</p><p>Exported by '
                f"ctxview on {_when(time.time())} from the store; every id is a link.</p></footer>"
            )
            w(tail())
        self.held.update(tally)
        self.sizes.append(written)

    def _blocks(
        self,
        space: Space,
        *,
        after: int = 0,
        stop: int | None = None,
        skip: frozenset[str] = frozenset(),
        epoch: int = 0,
    ) -> Iterator[tuple[int, str]]:
        """(first seq, HTML) of each block of a session, in order. A call waits for its result
        (parallel calls come before their results); the rest of the stream queues behind it.
        A half of the blocks (see `_make_forked`): the events past seq `after`, the blocks
        before seq `stop` (read on only for the results their calls wait for), and not the
        results in `skip`, whose calls the half before makes."""
        pending: list[list[Any]] = []  # [seq, html or None, call item, epoch]
        waiting: dict[str, list[Any]] = {}
        ctx = Ctx(space, epoch)
        skipped = set(skip)
        for item in self.source.items(space.id, after=after):
            ev = item.event
            joins = ev.kind == "result" and ev.call_ref in waiting
            past = stop is not None and ev.seq >= stop
            if (past and not joins) or (ev.kind == "result" and ev.call_ref in skipped):
                skipped.discard(ev.call_ref or "")
                if past and not waiting:
                    break
                continue
            if joins:
                block = waiting.pop(ev.call_ref or "")
                block[1] = self._tool(Ctx(space, block[3]), block[2], item)
            else:
                if ev.kind == "compaction":
                    epoch += 1
                ctx.epoch = epoch
                if ev.kind == "call" and ev.call_ref and ev.call_ref in space.call_rid:
                    block = [ev.seq, None, item, epoch]
                    waiting[ev.call_ref] = block
                    pending.append(block)
                else:
                    pending.append([ev.seq, self._single(ctx, item, epoch), None, epoch])
            while pending and pending[0][1] is not None:
                done = pending.pop(0)
                yield done[0], done[1]
            if len(pending) > 2000:  # a call whose result never came: let it go
                done = pending.pop(0)
                if done[1] is None:
                    waiting.pop(done[2].event.call_ref, None)
                    done[1] = self._tool(Ctx(space, done[3]), done[2], None)
                yield done[0], done[1]
        for done in pending:
            if done[1] is None:
                done[1] = self._tool(Ctx(space, done[3]), done[2], None)
            yield done[0], done[1]

    def _single(self, ctx: Ctx, item: Item, epoch: int) -> str:
        ev = item.event
        prefix = ctx.space.prefix
        if ev.kind == "message":
            return message_html(ctx, ev, f"{prefix}m-{ev.seq}")
        if ev.kind == "compaction":
            return boundary_html(Ctx(ctx.space, epoch - 1), ev, epoch, f"{prefix}b-{epoch}")
        if ev.kind in ("call", "result"):
            if ev.kind == "call":
                return self._tool(ctx, item, None)
            return self._tool(ctx, None, item)
        return event_html(ctx, ev)

    def _tool(self, ctx: Ctx, call: Item | None, result: Item | None) -> str:
        first = call or result
        assert first is not None
        cev = call.event if call else None
        rev = result.event if result else None
        out = [f'<section class="tool" id="{ctx.space.prefix}s-{first.event.seq}">',
               call_html(ctx, cev, rev)]  # fmt: skip
        if result is not None:
            out.append(result_html(ctx, result))
        elif cev is not None:
            out.append('<div class="dim">… no result was recorded</div>')
        ref = first.event.call_ref  # the call's, else the result's (first is the one there is)
        for sub in ctx.space.by_call.get(ref or "", []):
            out.extend(self._agent(sub, ctx))
        out.append("</section>\n")
        return "".join(out)

    def _agent(self, sub: Space, parent_ctx: Ctx | None) -> Iterator[str]:
        row = sub.info.row
        back = ""
        parent = sub.parent
        if parent is not None and sub.parent_call and sub.parent_call in parent.call_rid:
            rid = parent.call_rid[sub.parent_call]
            pctx = parent_ctx or Ctx(parent, 0)
            back = (f'<p class="dim">Started by the call of {id_link(pctx, rid, parent.ref(rid), parent)}'
                    " in the session above.</p>")  # fmt: skip
        yield (f'<details class="agent" id="{sub.agent_anchor}"><summary>sub-agent {sub.number}: '
               f"{esc(row.title or row.id)} · {row.results:,} results</summary>{back}"
               f'<p class="dim mono">{esc(row.id)}</p>')  # fmt: skip
        parts: list[str] = []
        for _, html in self._blocks(sub):
            parts.append(html)
            if len(parts) > 200:
                yield "".join(parts)
                parts = []
        yield "".join(parts)
        for orphan in sub.orphans:
            yield from self._agent(orphan, None)
        yield "</details>\n"

    def _write_index(self, spans: list[tuple[int | None, int | None]]) -> None:
        plan = self.plan
        row = plan.main.info.row
        path = self.out
        tally = Tally(self.held.redacted)
        pages_held = Tally(self.held.redacted)
        pages_held.update(self.held)
        with open(path, "w", encoding="utf-8", newline="\n") as f:

            def w(text: str) -> None:
                f.write(tally.add(text))

            w(head(row.title or row.id))
            w(f'<header class="top"><h1>{esc(row.title or row.id)}</h1>')
            w(facts_html(row, len(plan.spaces)))
            w(
                f'<p class="dim">{self.names.pages} pages of at most '
                f"{(self.page_bytes or 0) / 1e6:g} MB (a block is not split).</p></header>"
            )
            w(toc_html(plan, self.names, None))
            w(
                '<main><h2>Pages</h2><table class="sessions"><tr><th>page</th>'
                '<th>results</th><th class="num">size</th></tr>'
            )
            for i in range(self.names.pages):
                first, last = spans[i] if i < len(spans) else (None, None)
                span = (f"{plan.main.ref(first)} – {plan.main.ref(last)}"
                        if first is not None and last is not None else "—")  # fmt: skip
                size = self.sizes[i] if i < len(self.sizes) else 0
                w(f'<tr><td><a href="{self.names.name(i)}">page {i + 1}</a></td>'
                  f'<td class="mono">{esc(span)}</td><td class="num">{size / 1e6:.2f} MB'
                  "</td></tr>")  # fmt: skip
            w("</table></main>")
            pages_note = pages_held.note(f"its {self.names.pages} pages")
            f.write(
                f'<footer id="redactions"><p>{esc(tally.note("this index"))}; '
                f"{esc(pages_note)}.</p></footer>"
            )
            f.write(tail())
        self.held.update(tally)
        self.files.insert(0, path)


def list_facts(row: SessionRow) -> tuple[str, str]:
    """(state, source) as the viewer's session list shows them: live only while a writer holds
    the session (an imported session that never ended is not live), and a pulled session's
    source with the machine it came from."""
    machine = row.extra.get("machine")
    return ("live" if row.live else "ended",
            f"{row.source}@{machine}" if machine else row.source)  # fmt: skip


def session_index(out: Path, rows: list[tuple[SessionRow, str, int]], tally: Tally) -> None:
    """`--all`: an index of every session, with the session list's facts (its columns: title,
    started, results, state, saved, source, workspace), linking each file."""
    with open(out, "w", encoding="utf-8", newline="\n") as raw:
        f = _Counted(raw, tally)
        f.write(head("ctxview sessions"))
        f.write('<header class="top"><h1>Sessions</h1>'
                f'<p class="dim">{len(rows)} sessions, newest first; sub-agents are inside '
                "their session.</p></header><main>")  # fmt: skip
        f.write('<table class="sessions"><tr><th>session</th><th>started</th><th>state</th>'
                '<th class="num">results</th><th class="num">saved</th><th>title</th>'
                "<th>source</th><th>workspace</th></tr>")  # fmt: skip
        for row, name, agents in rows:
            state, source = list_facts(row)
            title = esc(row.title) + (f' <span class="dim">(+{agents} sub-agents)</span>'
                                      if agents else "")  # fmt: skip
            f.write(f'<tr><td class="mono"><a href="{attr(name)}">{esc(row.id)}</a></td>'
                    f"<td>{_when(row.started)}</td><td>{state}</td>"
                    f'<td class="num">{row.results:,}</td><td class="num">{row.chars_saved:,}</td>'
                    f'<td>{title}</td><td>{esc(source)}</td><td class="mono">'
                    f"{esc(row.workspace) or '—'}</td></tr>")  # fmt: skip
        f.write("</table></main>")
        raw.write(f'<footer id="redactions"><p>{esc(tally.note("this index"))}.</p></footer>')
        raw.write(tail())


class _Counted:
    """A file that counts the redaction markers of what is written to it."""

    def __init__(self, f: IO[str], tally: Tally) -> None:
        self.f = f
        self.tally = tally

    def write(self, text: str) -> int:
        return self.f.write(self.tally.add(text))


def _send(fd: int, value: dict[str, Any]) -> None:
    data = json.dumps(value).encode()
    while data:
        data = data[os.write(fd, data) :]
    os.close(fd)


def _receive(fd: int) -> dict[str, Any]:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks)) if chunks else {}
