"""One block to lines of styled text (before wrapping). Pure: the events and bodies come in,
rich Texts go out; nothing here touches the store or the screen."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rich.style import Style
from rich.text import Text

from ctxview.report.call_summary import args_summary, parse_args
from ctxview.rules.ids import format_id
from ctxview.store.records import Event
from ctxview.viewer.layout.outline import EDIT_KINDS, Block
from ctxview.viewer.render.colours import Palette
from ctxview.viewer.render.diff import diff_lines
from ctxview.viewer.render.highlight import highlight_lines
from ctxview.viewer.render.links import EpochOf, annotate, link_style, linkify
from ctxview.viewer.render.markdown import render_markdown
from ctxview.viewer.render.tool_forms import CallForm, call_form

FOLD_RESULT = 8  # body lines a folded result shows
FOLD_MESSAGE = 20
FOLD_SUMMARY = 3
MIDDLE_MAX = 2000  # lines of an opened elision shown in place
OPEN_MAX = 2000  # lines of an opened block; the result view shows all of them
MAX_LINE = 4000  # characters of one line in the transcript
ELISION = re.compile(r"^\[(\d+) lines elided, full output (#[0-9a-f]+)\]$")
# The importers' stand-in for an image block: `[image image/png, 1046384 bytes base64]`.
IMAGE = re.compile(r"^\s*\[image ([\w.+/-]+), (\d+) bytes base64\]\s*$")
READ_LINE = re.compile(r"^(\d+): ")

FOLD_META = Style(meta={"act": "fold"})
DETAIL_META = Style(meta={"act": "detail"})
AGENT_TOOLS = frozenset({"task", "agent"})  # calls that start a sub-agent: a Markdown report
# Those and Gemini's (its result is not Markdown): a live one makes the view look up the
# session's sub-agents again.
STARTS_AGENT = AGENT_TOOLS | {"invoke_agent"}
AGENT_META = Style(meta={"act": "agent"})
ELISION_META = Style(meta={"act": "elision"})
STUB_META = Style(meta={"act": "stub"})
NO_MARKUP = {"end": ""}


@dataclass
class BlockData:
    """What rendering a block needs from the store."""

    first: Event | None = None  # the message, compaction, end, unknown event, or the call
    result: Event | None = None
    shown: str | None = None
    stored: str | None = None  # only when asked for (stored mode, an opened elision)


@dataclass
class RenderContext:
    palette: Palette
    epoch_of: EpochOf
    stored_mode: bool = False
    digits: int = 4
    words: tuple[str, ...] = ()  # the search's words, marked in results' text
    raw: bool = False  # messages as their raw text, not rendered Markdown
    # rid -> (request, seq of the `elide` event): results an elision stride took out
    elided: dict[int, tuple[int, int]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def styled(text: str, style: Style | str) -> Text:
    """A Text whose style is a span, not a base style: text appended to it keeps its own."""
    out = Text(end="")
    out.append(text, style)
    return out


def plain(text: str, style: Style | str = "") -> Text:
    """Untrusted text as a Text: never markup; ANSI colour codes rendered, not printed raw."""
    if "\x1b" in text:
        t = Text.from_ansi(text, end="")
        t.stylize(style)
        return t
    return Text(text, style, end="")


def estimate(block: Block, stored_mode: bool) -> int:
    """A block's height before its text is loaded (exact when no line wraps)."""
    if block.kind == "message":
        n = block.text_lines
        return 1 + _folded_height(n, block.open, FOLD_MESSAGE) + 1
    if block.kind == "tool":
        if block.rseq is None:
            return 3
        lines = (block.stored_lines + 1) if stored_mode else block.shown_lines
        return 2 + _folded_height(max(lines - 1, 0), block.open, FOLD_RESULT) + 1
    if block.kind == "boundary":
        return 2 + _folded_height(block.text_lines, block.open, FOLD_SUMMARY) + 1
    return 2


def _folded_height(lines: int, opened: bool, limit: int) -> int:
    if opened:
        return lines if lines <= OPEN_MAX else OPEN_MAX + 1
    return lines if lines <= limit + 1 else limit + 1


def needs(block: Block, stored_mode: bool) -> tuple[bool, bool]:
    """(needs the shown body, needs the stored text) to render this block."""
    if block.kind != "tool" or block.rid is None:
        return False, False
    return True, stored_mode or block.elision_open


def render_block(block: Block, data: BlockData, ctx: RenderContext, width: int) -> list[Text]:
    if block.kind == "message":
        return _marked(_message(block, data, ctx, width), ctx)
    if block.kind == "tool":
        return _marked(_tool(block, data, ctx, width), ctx)
    if block.kind == "boundary":
        return _marked(_boundary(block, data, ctx, width), ctx)
    if block.kind == "end":
        return [Text("■ the session ended", ctx.palette.dim, end=""), Text(end="")]
    ev = data.first
    note = _note(ev, ctx) if ev is not None else None
    if note is not None:
        return [note, Text(end="")]
    what = (ev.text or ev.tool or "") if ev else ""
    kind = ev.kind if ev else block.role
    return [plain(f"‹{kind}› {what}"[:500], ctx.palette.dim), Text(end="")]


def _marked(lines: list[Text], ctx: RenderContext) -> list[Text]:
    """The search's words marked in every line but the block's head."""
    if ctx.words:
        for line in lines[1:]:
            line.highlight_words(ctx.words, ctx.palette.hit, case_sensitive=False)
    return lines


def image_line(line: str, p: Palette) -> Text | None:
    """An image's stand-in as a placeholder with its type and size; None for any other line."""
    m = IMAGE.match(line)
    if m is None:
        return None
    size = int(m.group(2)) * 3 // 4  # base64 is 4 characters per 3 bytes
    t = styled("▣ image", p.tool)
    t.append(f"  {m.group(1)} · {_human_bytes(size)}", p.dim)
    return t


def _human_bytes(n: int) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def _note(ev: Event, ctx: RenderContext) -> Text | None:
    """The engine's bookkeeping rows (usage, an elision stride, compaction due) as one dim line;
    None for a kind this viewer does not know."""
    p = ctx.palette
    extra = ev.extra
    if ev.kind == "usage" and isinstance(extra.get("usage"), dict):
        parts = [f"{k.removesuffix('_tokens').replace('_', ' ')} {v:,}"
                 for k, v in extra["usage"].items() if isinstance(v, int)]  # fmt: skip
        return Text("  usage: " + " · ".join(parts), p.dim, end="")
    if ev.kind == "elide" and isinstance(extra.get("rids"), list):
        rids = [r for r in extra["rids"] if isinstance(r, int)]
        t = styled(f"  ✂ {len(rids)} older results now go to the model as stubs: ", p.dim)
        for i, rid in enumerate(rids[:30]):
            if i:
                t.append(", ", p.dim)
            t.append(format_id(rid, ctx.digits), link_style(rid, p.link))
        if len(rids) > 30:
            t.append(f" … {len(rids) - 30} more", p.dim)
        return t
    if ev.kind == "compact_due":
        tokens, above = extra.get("tokens"), extra.get("above_tokens")
        return Text(f"  ⚑ compaction due: {tokens} tokens, above {above}", p.dim, end="")
    return None


def _split(text: str, keep: int) -> tuple[list[str], int]:
    """The first `keep` lines of `text` (each clipped to MAX_LINE characters) and how many lines
    it has, without splitting a 200 MB text into millions of strings."""
    parts = text.split("\n", keep)
    if len(parts) > keep:
        rest = parts.pop()
        total = len(parts) + rest.count("\n") + (0 if rest.endswith("\n") else 1)
    else:
        if text.endswith("\n"):
            parts.pop()
        total = len(parts)
    return [_clip(line) for line in parts], total


class _Clipped(str):
    """A line cut to MAX_LINE characters for drawing; `cut` says how many more it has (said
    beside it, as an annotation: the text drawn is the line's own)."""

    cut: int


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE:
        return line
    out = _Clipped(line[:MAX_LINE])
    out.cut = len(line) - MAX_LINE
    return out


def _noted_cut(text: Text, line: str, p: Palette) -> Text:
    """`text` drawn from `line`, with the note of what was cut off it, if anything."""
    if isinstance(line, _Clipped):
        annotate(text, f"… +{line.cut:,} characters", p.dim)
    return text


def _limit(block: Block, limit: int) -> int:
    """How many lines of a body to take: the fold and one more, or all up to OPEN_MAX."""
    return OPEN_MAX + 1 if block.open else limit + 2


def _fold(
    lines: list[Text], total: int, block: Block, limit: int, ctx: RenderContext
) -> list[Text]:
    """Folded: `limit` lines and "+N lines"; opened: up to OPEN_MAX lines and a link to all."""
    p = ctx.palette
    if block.open:
        if total <= OPEN_MAX:
            return lines
        more = styled(f"  … {total - OPEN_MAX:,} more lines", p.fold)
        if block.rid is not None:
            more.append(": open ", p.dim)
            more.append(format_id(block.rid, ctx.digits), link_style(block.rid, p.link))
            more.append(" for all of them", p.dim)
        return [*lines[:OPEN_MAX], more]
    if total <= limit + 1:
        return lines
    fold = styled(f"  +{total - limit:,} lines", p.fold + FOLD_META)
    fold.append("  (enter opens)", p.dim + FOLD_META)
    return [*lines[:limit], fold]


# Messages


def _message(block: Block, data: BlockData, ctx: RenderContext, width: int) -> list[Text]:
    p = ctx.palette
    ev = data.first
    role = (ev.role if ev else block.role) or "message"
    extra = ev.extra if ev else {}
    text = ev.text if ev and ev.text is not None else ""
    thinking = found if isinstance(found := extra.get("thinking"), str) else ""
    images = count if isinstance(count := extra.get("images"), int) else 0
    if role == "assistant" and not text.strip() and not thinking.strip() and not images:
        return []  # a turn of tool calls only: its calls follow, an empty header says nothing
    style = {"user": p.user, "assistant": p.assistant}.get(role, p.dim + Style(bold=True))
    head = styled(f"● {role}", style)
    usage = extra.get("usage")
    if isinstance(usage, dict):
        parts = [f"{k.removesuffix('_tokens').replace('_', ' ')} {v:,}" for k, v in usage.items()
                 if isinstance(v, int)]  # fmt: skip
        if parts:
            head.append("   " + " · ".join(parts), p.dim)
    out = [head]
    if thinking.strip():
        out.extend(_thinking(block, thinking, ctx, width))
    for _ in range(images):
        out.append(styled("▣ image", p.tool) + Text("  attached to this message", p.dim))
    if not text.strip():
        return [*out, Text(end="")]
    if ctx.raw or role not in ("user", "assistant"):
        raw, total = _split(text, _limit(block, FOLD_MESSAGE))
        lines = [_noted_cut(image_line(line, p) or plain(line), line, p) for line in raw]
    else:
        lines = [image_line(t.plain, p) or t for t in render_markdown(text, p, width)]
        total = len(lines)
        lines = lines[: _limit(block, FOLD_MESSAGE)]
    lines = [linkify(line, ctx.epoch_of, block.epoch, p) for line in lines]
    return [*out, *_fold(lines, total, block, FOLD_MESSAGE, ctx), Text(end="")]


def _thinking(block: Block, thinking: str, ctx: RenderContext, width: int) -> list[Text]:
    """The model's thinking, folded to one line; opened in place (t, or a click)."""
    p = ctx.palette
    n = thinking.count("\n") + 1
    if not block.detail_open:
        t = styled("✻ thinking", p.dim + Style(italic=True) + DETAIL_META)
        t.append(f" · {n:,} line{'s' * (n != 1)}  (t opens)", p.dim + DETAIL_META)
        return [t]
    out = [styled("✻ thinking  (t folds)", p.dim + Style(italic=True) + DETAIL_META)]
    body = (
        thinking.split("\n")
        if ctx.raw
        else [t.plain for t in render_markdown(thinking, p, width - 2)]
    )
    for line in body[:OPEN_MAX]:
        t = styled("┆ ", p.dim)
        t.append(line, p.dim + Style(italic=True))
        out.append(t)
    if len(body) > OPEN_MAX:
        out.append(styled(f"┆ … {len(body) - OPEN_MAX:,} more lines", p.fold))
    return out


# Calls and results


def _call_lines(block: Block, data: BlockData, ctx: RenderContext, width: int) -> list[Text]:
    """The call: its line, then its form (a checklist, a question) and its folded detail."""
    p = ctx.palette
    tool = block.tool or (data.first.tool if data.first else None) or "tool"
    args = parse_args(data.first.args) if data.first is not None else {}
    form = call_form(tool, args, p, width - 2) if data.first is not None else None
    line = styled(f"▸ {tool} ", p.tool)
    summary = form.summary if form is not None and form.summary is not None else None
    line.append_text(linkify(plain(summary if summary is not None else args_summary(tool, args)),
                             ctx.epoch_of, block.epoch, p))  # fmt: skip
    res = data.result
    if res is not None and block.rkind in EDIT_KINDS:
        extra = res.extra
        added, removed = extra.get("added"), extra.get("removed")
        if isinstance(added, int) and isinstance(removed, int):
            line.append("  ")
            line.append(f"+{added}", p.add)
            line.append(" ")
            line.append(f"−{removed}", p.remove)
    out = [line]
    if form is not None:
        out.extend(form.lines)
        out.extend(_detail(block, form, ctx))
    child = ctx.extra.get("agents", {}).get(block.call_ref) if block.call_ref else None
    if child is not None:
        _sid, title, results = child
        t = styled("  ↳ sub-agent ", p.tool + AGENT_META)
        t.append(f"{title} · {results:,} result{'s' * (results != 1)}", AGENT_META)
        t.append("  (enter opens it)", p.dim + AGENT_META)
        out.append(t)
    return out


def _detail(block: Block, form: CallForm, ctx: RenderContext) -> list[Text]:
    """A call's prompt, content or input: folded to one line (or its first lines), opened in
    place with t or a click."""
    p = ctx.palette
    lines = form.detail
    if not lines:
        return []
    n = len(lines)
    shown = lines[:OPEN_MAX] if block.detail_open else lines[: form.detail_fold]
    out = []
    for line in shown:
        t = styled("  ┆ ", p.dim)
        t.append_text(line)
        out.append(t)
    if block.detail_open and n > OPEN_MAX:
        out.append(styled(f"  ┆ … {n - OPEN_MAX:,} more lines", p.fold))
    if block.detail_open:
        if n > form.detail_fold:
            out.append(styled(f"  ┆ ({form.detail_name}: t folds)", p.dim + DETAIL_META))
        return out
    if n <= form.detail_fold + 1:
        return [*out, *(styled("  ┆ ", p.dim) + x for x in lines[len(shown) :])]
    rest = n - len(shown)
    t = styled(f"  ┆ {form.detail_name}", p.fold + DETAIL_META)
    more = " more" if shown else ""
    t.append(f" · {rest:,}{more} line{'s' * (rest != 1)}  (t opens)", p.dim + DETAIL_META)
    return [*out, t]


def _bracket_style(block: Block, p: Palette) -> Style:
    if block.rkind == "error":
        return p.error
    if block.is_stub:
        return p.stub
    if block.rkind == "recall":
        return p.recall
    return p.bracket


def _tool(block: Block, data: BlockData, ctx: RenderContext, width: int) -> list[Text]:
    p = ctx.palette
    out = _call_lines(block, data, ctx, width)
    if block.rseq is None:
        return [*out, Text("  … running", p.dim, end=""), Text(end="")]
    shown = data.shown or ""
    bracket, _, body = shown.partition("\n")
    head = linkify(plain(bracket, _bracket_style(block, p)), ctx.epoch_of, block.epoch, p)
    # What the viewer says about the bracket goes after it, as annotations (links.py).
    if block.is_stub and block.points_to is not None:
        annotate(head, "↵ leads to " + format_id(block.points_to, ctx.digits), p.dim + STUB_META)
    stride = ctx.elided.get(block.rid) if block.rid is not None else None
    if stride is not None:
        # Worded like a link's "not in context since boundary N"; a click goes to the stride.
        request, seq = stride
        annotate(head, f"elided since request {request}",
                 p.dim + Style(meta={"act": "stride", "seq": seq}))  # fmt: skip
    if ctx.stored_mode:
        annotate(head, "stored text", p.dim)
    out.append(head)
    text = data.stored if ctx.stored_mode and data.stored is not None else body
    if ctx.stored_mode and block.is_stub and data.stored is not None:
        text = data.stored
    if not text:
        return [*out, Text(end="")]
    if (
        (block.tool or "").lower() in AGENT_TOOLS
        and not ctx.raw
        and block.rkind == "full"
        and not block.capped
    ):
        # A sub-agent's report is Markdown, like a message.
        md = render_markdown(text, ctx.palette, width)
        report = [linkify(t, ctx.epoch_of, block.epoch, ctx.palette) for t in md]
        return [*out, *_fold(report[: _limit(block, FOLD_RESULT)], len(report), block, FOLD_RESULT,
                             ctx), Text(end="")]  # fmt: skip
    lines, total = _split(text, _limit(block, FOLD_RESULT))
    drawn = _body(block, data, lines, ctx)
    return [*out, *_fold(drawn, total, block, FOLD_RESULT, ctx), Text(end="")]


def _body(block: Block, data: BlockData, lines: list[str], ctx: RenderContext) -> list[Text]:
    p = ctx.palette
    res = data.result
    path = res.path if res else None
    visible = lines
    if block.rkind in EDIT_KINDS:
        coloured = diff_lines(visible, path, p)
    elif block.tool == "read" and block.rkind in ("full", "unchanged"):
        coloured = _read_lines(visible, path, p)
    elif block.rkind == "error":
        coloured = [plain(line, p.error) for line in visible]
    else:
        coloured = [image_line(line, p) or plain(line) for line in visible]
    out: list[Text] = []
    for i, text in enumerate(coloured):
        match = ELISION.match(lines[i]) if i < len(lines) else None
        if match and not ctx.stored_mode:
            out.extend(_elision(block, data, i, int(match.group(1)), ctx, lines[i]))
            continue
        line = lines[i] if i < len(lines) else ""
        out.append(_noted_cut(linkify(text, ctx.epoch_of, block.epoch, p), line, p))
    return out


def _read_lines(lines: list[str], path: str | None, p: Palette) -> list[Text]:
    numbers: list[str] = []
    code: list[str] = []
    for line in lines:
        m = READ_LINE.match(line)
        numbers.append(m.group(0) if m else "")
        code.append(line[m.end() :] if m else line)
    coloured = highlight_lines(code, path, p.pygments)
    out = []
    for i, number in enumerate(numbers):
        # A Read of an image file: its result is the image's stand-in, not numbered lines.
        if not number and (image := image_line(code[i], p)) is not None:
            out.append(image)
            continue
        t = styled(number, p.dim)
        t.append_text(coloured[i] if coloured else Text(code[i], end=""))
        out.append(t)
    return out


def _elision(block: Block, data: BlockData, index: int, n: int, ctx: RenderContext,
             line: str) -> list[Text]:  # fmt: skip
    p = ctx.palette
    head = linkify(plain(line, p.elision + ELISION_META), ctx.epoch_of, block.epoch, p)
    if not block.elision_open:
        return [annotate(head, "click or e opens the middle here", p.dim + ELISION_META)]
    if data.stored is None:
        return [head, Text("  ┆ loading the stored text…", p.dim, end="")]
    stored = data.stored.split("\n")
    middle = stored[index : index + n]
    out = [styled(f"┆ {n} elided lines, from the stored text:", p.elision + ELISION_META)]
    for m in middle[:MIDDLE_MAX]:
        t = styled("┆ ", p.elision)
        t.append_text(plain(m))
        out.append(t)
    if n > MIDDLE_MAX:
        more = styled(f"┆ … {n - MIDDLE_MAX} more lines: open ", p.elision)
        rid = block.rid or 0
        more.append(format_id(rid, ctx.digits), link_style(rid, p.link))
        more.append(" for all of it", p.elision)
        out.append(more)
    return out


# Compaction boundaries


def _boundary(block: Block, data: BlockData, ctx: RenderContext, width: int) -> list[Text]:
    p = ctx.palette
    title = f" compaction {block.boundary_number} "
    side = max(width - len(title), 4)
    row = styled("━" * (side // 2) + title + "━" * (side - side // 2), p.boundary + FOLD_META)
    out = [row]
    ev = data.first
    summary = (ev.text or "") if ev else ""
    if ctx.raw:
        raw, total = _split(summary, _limit(block, FOLD_SUMMARY))
        lines = [_noted_cut(plain(line, p.boundary_text), line, p) for line in raw]
    else:
        # Rendered as messages are (the summary is the model's Markdown), on the boundary's
        # ground: `r` shows it raw, as it does messages.
        lines = render_markdown(summary, p, width)
        total = len(lines)
        lines = lines[: _limit(block, FOLD_SUMMARY)]
        for line in lines:
            line.style = p.boundary_text
    lines = [linkify(line, ctx.epoch_of, block.epoch, p) for line in lines]
    out.extend(_fold(lines, total, block, FOLD_SUMMARY, ctx))
    rows = (ev.extra.get("rows") if ev else None) or []
    if rows:
        out.append(Text("Files read before this summary:", p.dim + Style(bold=True), end=""))
        wpath = min(max(len(str(r.get("path", ""))) for r in rows), 60)
        for r in rows:
            first, last, total = r.get("first"), r.get("last"), r.get("total")
            span = f"{first}-{last} of {total}" if total else "empty"
            t = Text(
                f"  {_tail(str(r.get('path', '')), 60):<{wpath}}  {span:<18} {str(r.get('sha', ''))[:8]:<8}  ",
                end="",
            )
            rid = r.get("rid")
            if isinstance(rid, int):
                t.append_text(linkify(Text(format_id(rid, ctx.digits), end=""), ctx.epoch_of,
                                      block.epoch, p))  # fmt: skip
            out.append(t)
    out.append(Text(end=""))
    return out


def _tail(path: str, width: int) -> str:
    """A long path's end, which names the file: `…/strategy/manual_commit.go`."""
    return path if len(path) <= width else "…" + path[-(width - 1) :]
