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
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

from pygments import highlight as pyg_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer

from ..call_summary import args_summary, parse_args
from ..rules.brackets import file_sections
from ..store.records import Event, SessionRow
from .lexers import lexer_class
from .plan import EDIT_KINDS, STUB_KINDS, Plan, Space
from .source import Item, Source, extra
from .style import SCRIPT, css
from .text import (
    ANSI,
    ELISION,
    attr,
    count_lines,
    esc,
    files_read_rows,
    link_ids,
)

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
    """Where a piece of HTML is being written: which session's ids, which page, which epoch."""

    space: Space
    page: int
    epoch: int
    pages: PageNames


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


def href(ctx: Ctx, space: Space, rid: int) -> str:
    target = space.page_for(rid)
    anchor = space.anchor(rid)
    if target == ctx.page:
        return f"#{anchor}"
    return f"{ctx.pages.name(target)}#{anchor}"


def id_link(ctx: Ctx, rid: int, label: str, space: Space | None = None) -> str:
    space = space or ctx.space
    where = space.epoch_of.get(rid)
    url = href(ctx, space, rid)
    if where is not None and where < ctx.epoch:
        return (f'<a class="id stale" href="{url}">{esc(label)}</a>'
                f'<span class="note"> (not in context since boundary {where + 1})</span>')  # fmt: skip
    return f'<a class="id" href="{url}">{esc(label)}</a>'


def linked(ctx: Ctx, text: str) -> str:
    """Escaped text with every id of the session a link."""
    known = ctx.space.epoch_of
    return link_ids(text, known.__contains__, lambda rid, label: id_link(ctx, rid, label), esc)


# Markdown (messages, summaries): raw HTML and images off, ids linked in text and code.


@cache
def _md() -> Any:
    from markdown_it import MarkdownIt  # imported when a message first needs it (30 ms)

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable(["image", "html_inline", "html_block"])
    rules = md.renderer.rules

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


def markdown(ctx: Ctx, text: str) -> str:
    if not _MD_MARKS.search(text):
        return f"<p>{linked(ctx, text)}</p>\n"
    try:
        return _md().render(text, {"ctx": ctx})
    except RecursionError:  # pathological nesting: show it as text
        return f"<pre>{linked(ctx, text)}</pre>"


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
    return (out + [""] * len(lines))[: len(lines)]


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
        out.append(f' <span class="dim">↵ leads to</span> '
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
        first = esc(text.split("\n", 1)[0][:200])
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
    return f'<div class="event">‹{esc(ev.kind)}› {linked(ctx, what[:500])}</div>'


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


class HtmlExport:
    """Writes a session's plan out page by page."""

    def __init__(self, source: Source, plan: Plan, out: Path) -> None:
        self.source = source
        self.plan = plan
        self.names = PageNames(out, plan.pages)
        self.out = out
        self.files: list[Path] = []
        self.sizes: list[int] = []
        self._fh: IO[str] | None = None
        self._page = -1
        self._written = 0

    # pages

    def _open_page(self, page: int) -> None:
        self._close_page()
        self._page = page
        path = self.names.path(page)
        self.files.append(path)
        # Open across many blocks, closed by _close_page (also on error, by run).
        self._fh = open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 20)  # noqa: SIM115
        row = self.plan.main.info.row
        title = row.title or row.id
        suffix = f" — page {page + 1} of {self.names.pages}" if self.names.pages > 1 else ""
        self._w(head(title + suffix))
        self._w(f'<header class="top"><h1>{esc(title)}</h1>')
        if page == 0:
            self._w(facts_html(row, len(self.plan.spaces)))
            self._w('<p class="dim">Secrets: <a href="#redactions">what was redacted</a> is '
                    "at the end.</p>" if self.names.pages == 1 else "")  # fmt: skip
        self._w("</header>")
        self._w(pages_nav(self.names, page, self.out.name))
        if self.names.pages == 1:
            self._w(toc_html(self.plan, self.names, 0))
        self._w("<main>\n")

    def _close_page(self, footer: str = "") -> None:
        if self._fh is None:
            return
        self._w("</main>")
        self._w(pages_nav(self.names, self._page, self.out.name))
        self._w(footer)
        self._w(tail())
        self._fh.close()
        self.sizes.append(self._written)
        self._written = 0
        self._fh = None

    def _w(self, text: str) -> None:
        assert self._fh is not None
        self._fh.write(text)
        self._written += len(text)

    # blocks

    def run(self, redaction_note: Callable[[], str], workers: int = 1) -> list[Path]:
        """Every page, then the index. `workers` 2: the pages in two processes, the first half
        and the rest (pages are independent once the plan is made); the same bytes either way."""
        split = self.plan.pages // 2 if workers > 1 and self.plan.pages >= 4 else 0
        if split and hasattr(os, "fork"):
            return self._run_forked(split, redaction_note)
        self._write_pages(0, None)
        self._write_end(redaction_note)
        return self.files

    def _write_pages(self, first: int, stop: int | None) -> None:
        """The main session's blocks from page `first` up to the block at seq `stop`."""
        plan = self.plan
        starts = list(plan.page_starts[first:])
        start = plan.page_starts[first - 1] if first else 0
        skip = plan.open_at[first - 1] if first else frozenset()
        epoch = sum(1 for e in plan.toc if e.kind == "boundary" and e.seq < start)
        self._open_page(first)
        page = first
        for seq, html in self._blocks(plan.main, first, after=start - 1 if first else 0,
                                      stop=stop, skip=skip, epoch=epoch):  # fmt: skip
            while starts and seq >= starts[0]:
                starts.pop(0)
                page += 1
                self._close_page()
                self._open_page(page)
            self._w(html)

    def _write_end(self, redaction_note: Callable[[], str], index: bool = True) -> None:
        """The sub-agents no block holds, the footer with what was redacted, and the index."""
        plan = self.plan
        if plan.main.orphans:
            self._w('<section class="orphans"><h2>Sub-agents</h2>')
            for sub in plan.main.orphans:
                for html in self._agent(sub, None):
                    self._w(html)
            self._w("</section>")
        note = redaction_note()
        footer = (f'<footer id="redactions"><p>{esc(note)}.</p><p>Exported by ctxview on '
                  f"{_when(time.time())} from the store; every id is a link.</p></footer>")  # fmt: skip
        self._close_page(footer)
        if index and plan.pages > 1:
            self._write_index(note)

    def _run_forked(self, split: int, redaction_note: Callable[[], str]) -> list[Path]:
        """Pages [0, split) in one child, the rest in another, each on its own connection. A
        redaction is counted by the process that writes its text; the second child waits for
        the first's counts before its footer, and the parent writes the index with the sum."""
        counts = self.source.redactor.counts
        base = Counter(counts)
        first_done, first_w = os.pipe()
        last_done, last_w = os.pipe()
        pids: list[int] = []
        got: dict[str, Any] = {}
        try:
            for part in (0, 1):
                pid = os.fork()
                if pid == 0:  # the child: its pages, its counts, then gone without cleanup
                    code = 1
                    try:
                        os.close(first_done if part == 0 else first_w)
                        os.close(last_done)
                        self.source = Source(self.source.path, self.source.redactor)
                        if part == 0:
                            os.close(last_w)
                            self._write_pages(0, self.plan.page_starts[split - 1])
                            self._close_page()
                            _send(first_w, {"counts": counts, "sizes": self.sizes})
                        else:
                            self._write_pages(split, None)
                            first = _receive(first_done)
                            counts.update(Counter(first["counts"]) - base)
                            self.sizes = [*first["sizes"], *self.sizes]
                            self._write_end(redaction_note, index=False)  # the index: the parent
                            _send(last_w, {"counts": counts, "sizes": self.sizes})
                        code = 0
                    except BaseException:
                        traceback.print_exc()
                    finally:
                        os._exit(code)
                pids.append(pid)
            for fd in (first_w, first_done, last_w):
                os.close(fd)
            got = _receive(last_done)
        finally:
            for fd in (first_w, first_done, last_w, last_done):
                with contextlib.suppress(OSError):
                    os.close(fd)
            codes = [os.waitpid(pid, 0)[1] for pid in pids]
        if len(pids) < 2 or any(codes) or not got:
            raise RuntimeError("An export process failed; its error is above.")
        counts.clear()
        counts.update(got["counts"])
        self.sizes = got["sizes"]
        self.files = [self.names.path(n) for n in range(self.plan.pages)]
        self._write_index(redaction_note())
        return self.files

    def _blocks(
        self,
        space: Space,
        page: int,
        *,
        after: int = 0,
        stop: int | None = None,
        skip: frozenset[str] = frozenset(),
        epoch: int = 0,
    ) -> Iterator[tuple[int, str]]:
        """(first seq, HTML) of each block of a session, in order. A call waits for its result
        (parallel calls come before their results); the rest of the stream queues behind it.
        A part of the pages (see `_run_forked`): the events past seq `after`, the blocks before
        seq `stop` (read on only for the results their calls wait for), and not the results in
        `skip`, whose calls the part before writes. What is read but not written is not counted
        as redacted here: the part that writes it counts it."""
        pending: list[list[Any]] = []  # [seq, html or None, call item]
        waiting: dict[str, list[Any]] = {}
        ctx = Ctx(space, page, epoch, self.names)
        counts = self.source.redactor.counts
        items = self.source.items(space.id, after=after)
        partial = stop is not None or bool(skip)
        skipped = set(skip)
        while True:
            before = Counter(counts) if partial else None
            item = next(items, None)
            if item is None:
                break
            ev = item.event
            if before is not None:
                joins = ev.kind == "result" and ev.call_ref in waiting
                past = stop is not None and ev.seq >= stop
                if (past and not joins) or (ev.kind == "result" and ev.call_ref in skipped):
                    skipped.discard(ev.call_ref or "")
                    counts.clear()
                    counts.update(before)
                    if past and not waiting:
                        break
                    continue
            if space is self.plan.main:
                ctx.page = self._page_of(ev.seq, ctx.page)
            if ev.kind == "result" and ev.call_ref and ev.call_ref in waiting:
                block = waiting.pop(ev.call_ref)
                ctx_b = Ctx(space, block[3], block[4], self.names)
                block[1] = self._tool(ctx_b, block[2], item)
            else:
                if ev.kind == "compaction":
                    epoch += 1
                ctx.epoch = epoch
                if ev.kind == "call" and ev.call_ref and ev.call_ref in space.call_rid:
                    block = [ev.seq, None, item, ctx.page, epoch]
                    waiting[ev.call_ref] = block
                    pending.append(block)
                else:
                    html = self._single(ctx, item, epoch)
                    pending.append([ev.seq, html, None, ctx.page, epoch])
            while pending and pending[0][1] is not None:
                done = pending.pop(0)
                yield done[0], done[1]
            if len(pending) > 2000:  # a call whose result never came: let it go
                done = pending.pop(0)
                if done[1] is None:
                    ref = done[2].event.call_ref
                    waiting.pop(ref, None)
                    done[1] = self._tool(Ctx(space, done[3], done[4], self.names), done[2], None)
                yield done[0], done[1]
        for done in pending:
            if done[1] is None:
                done[1] = self._tool(Ctx(space, done[3], done[4], self.names), done[2], None)
            yield done[0], done[1]

    def _page_of(self, seq: int, current: int) -> int:
        starts = self.plan.page_starts
        while current < len(starts) and seq >= starts[current]:
            current += 1
        return current

    def _single(self, ctx: Ctx, item: Item, epoch: int) -> str:
        ev = item.event
        prefix = ctx.space.prefix
        if ev.kind == "message":
            return message_html(ctx, ev, f"{prefix}m-{ev.seq}")
        if ev.kind == "compaction":
            ctx_before = Ctx(ctx.space, ctx.page, epoch - 1, ctx.pages)
            return boundary_html(ctx_before, ev, epoch, f"{prefix}b-{epoch}")
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
        ref = (cev or rev).call_ref if (cev or rev) else None  # type: ignore[union-attr]
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
            pctx = parent_ctx or Ctx(parent, sub.page, 0, self.names)
            back = (f'<p class="dim">Started by the call of {id_link(pctx, rid, parent.ref(rid), parent)}'
                    " in the session above.</p>")  # fmt: skip
        yield (f'<details class="agent" id="{sub.agent_anchor}"><summary>sub-agent {sub.number}: '
               f"{esc(row.title or row.id)} · {row.results:,} results</summary>{back}"
               f'<p class="dim mono">{esc(row.id)}</p>')  # fmt: skip
        parts: list[str] = []
        for _, html in self._blocks(sub, sub.page):
            parts.append(html)
            if len(parts) > 200:
                yield "".join(parts)
                parts = []
        yield "".join(parts)
        for orphan in sub.orphans:
            yield from self._agent(orphan, None)
        yield "</details>\n"

    def _write_index(self, note: str) -> None:
        plan = self.plan
        row = plan.main.info.row
        path = self.out
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(head(row.title or row.id))
            f.write(f'<header class="top"><h1>{esc(row.title or row.id)}</h1>')
            f.write(facts_html(row, len(plan.spaces)))
            f.write(f'<p class="dim">{plan.pages} pages (split past '
                    f"{self._threshold_note()}).</p></header>")  # fmt: skip
            f.write(toc_html(plan, self.names, None))
            f.write('<main><h2>Pages</h2><table class="sessions"><tr><th>page</th>'
                    "<th>results</th><th class=\"num\">size</th></tr>")  # fmt: skip
            for i in range(plan.pages):
                first, last = plan.page_ids[i] if i < len(plan.page_ids) else (None, None)
                span = (f"{plan.main.ref(first)} – {plan.main.ref(last)}"
                        if first is not None and last is not None else "—")  # fmt: skip
                size = self.sizes[i] if i < len(self.sizes) else 0
                f.write(f'<tr><td><a href="{self.names.name(i)}">page {i + 1}</a></td>'
                        f'<td class="mono">{esc(span)}</td><td class="num">{size / 1e6:.1f} MB'
                        "</td></tr>")  # fmt: skip
            f.write("</table></main>")
            f.write(f'<footer id="redactions"><p>{esc(note)}.</p></footer>')
            f.write(tail())
        self.files.insert(0, path)

    threshold: int | None = None

    def _threshold_note(self) -> str:
        return f"{self.threshold / 1e6:g} MB a page" if self.threshold else "a size"


def list_facts(row: SessionRow) -> tuple[str, str]:
    """(state, source) as the viewer's session list shows them: live only while a writer holds
    the session (an imported session that never ended is not live), and a pulled session's
    source with the machine it came from."""
    machine = row.extra.get("machine")
    return ("live" if row.live else "ended",
            f"{row.source}@{machine}" if machine else row.source)  # fmt: skip


def session_index(out: Path, rows: list[tuple[SessionRow, str, int]], note: str) -> None:
    """`--all`: an index of every session, with the session list's facts (its columns: title,
    started, results, state, saved, source, workspace), linking each file."""
    with open(out, "w", encoding="utf-8", newline="\n") as f:
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
        f.write(f'</table></main><footer id="redactions"><p>{esc(note)}.</p></footer>')
        f.write(tail())


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
