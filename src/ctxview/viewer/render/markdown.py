"""Markdown to lines of styled text for the Line-API transcript: headings, lists, emphasis,
block quotes, tables, links, and code fences coloured by their language.

Parsed with markdown-it-py (CommonMark, tables, strikethrough) and drawn as rich Texts, one per
line, which the view wraps and caches like any other block. Never a Markdown widget per
message (measured unusable at a thousand messages). Untrusted text only gains styles: nothing
is parsed as markup."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.style import Style
from rich.text import Text

from ctxview.viewer.render.colours import Palette
from ctxview.viewer.render.highlight import highlight_code

MAX_CHARS = 200_000  # a longer message is shown as its raw text: parsing it would stall a frame
BULLETS = ("•", "◦", "▪")
CHECKS = {"[ ]": "☐", "[x]": "☑", "[X]": "☑"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


@dataclass
class _Level:
    first: str  # the prefix of its first line (a list marker)
    rest: str  # the prefix of the lines after it
    style: Style
    used: bool = False


class _Renderer:
    def __init__(self, palette: Palette, width: int) -> None:
        self.p = palette
        self.width = max(width, 10)
        self.out: list[Text] = []
        self.levels: list[_Level] = []
        self.lists: list[list[int | None]] = []  # per open list: [next number] or [None]
        self.blank = False  # a blank line is due before the next block
        self.fresh = False  # a list item or quote just opened: its first block needs no blank

    # Lines

    def _prefix(self) -> Text:
        t = Text(end="")
        for level in self.levels:
            t.append(level.rest if level.used else level.first, level.style)
            level.used = True
        return t

    def emit(self, line: Text) -> None:
        self._flush_blank()
        self.fresh = False
        t = self._prefix()
        t.append_text(line)
        self.out.append(t)

    def _blank_line(self) -> Text:
        t = Text(end="")
        for level in self.levels:
            if level.rest.strip():  # a quote's bar continues over its blank lines
                t.append(level.rest, level.style)
        return t

    def _flush_blank(self) -> None:
        if self.blank and self.out:
            self.out.append(self._blank_line())
        self.blank = False

    def block_start(self) -> None:
        if self.out and not self.fresh:
            self.blank = True

    def open_level(self, level: _Level) -> None:
        """A list item or a quote: the blank line due goes before it, outside of it."""
        self._flush_blank()
        self.levels.append(level)
        self.fresh = True

    # Inline

    def inline(self, token: Token, base: Style | None = None) -> list[Text]:
        """An inline token's children to lines (soft and hard breaks start a new line)."""
        p = self.p
        lines = [Text(end="")]
        stack: list[Style] = [base or Style()]
        href: list[str] = []
        for child in token.children or []:
            kind = child.type
            style = stack[-1]
            if kind == "text":
                lines[-1].append(child.content, style)
            elif kind in ("softbreak", "hardbreak"):
                lines.append(Text(end=""))
            elif kind == "code_inline":
                lines[-1].append(child.content, style + p.tool)
            elif kind == "strong_open":
                stack.append(style + Style(bold=True))
            elif kind == "em_open":
                stack.append(style + Style(italic=True))
            elif kind == "s_open":
                stack.append(style + Style(strike=True))
            elif kind == "link_open":
                href.append(str(child.attrs.get("href", "")))
                stack.append(style + p.link)
            elif kind == "link_close":
                if len(stack) > 1:
                    stack.pop()
                url = href.pop() if href else ""
                shown = lines[-1].plain
                if url and not shown.endswith(url) and not url.startswith("mailto:"):
                    lines[-1].append(f" ({url})", p.dim)
            elif kind in ("strong_close", "em_close", "s_close"):
                if len(stack) > 1:
                    stack.pop()
            elif kind == "image":
                alt = child.content or "image"
                lines[-1].append(f"[image: {alt}]", p.dim)
                src = str(child.attrs.get("src", ""))
                if src:
                    lines[-1].append(f" ({src})", p.dim)
            elif kind in ("html_inline", "html_block"):
                lines[-1].append(child.content, style)
            else:
                lines[-1].append(child.content, style)
        return lines

    # Blocks

    def render(self, tokens: list[Token]) -> list[Text]:
        i = 0
        n = len(tokens)
        while i < n:
            t = tokens[i]
            kind = t.type
            if kind == "heading_open":
                self.block_start()
                level = int(t.tag[1:]) if t.tag[1:].isdigit() else 1
                style = self._heading(level)
                for line in self.inline(tokens[i + 1], style):
                    self.emit(line)
                i += 3
                continue
            if kind == "paragraph_open":
                self.block_start()
                lines = self.inline(tokens[i + 1])
                if self.lists and lines and self._in_item_start():
                    lines[0] = self._task(lines[0])
                for line in lines:
                    self.emit(line)
                i += 3
                continue
            if kind in ("bullet_list_open", "ordered_list_open"):
                if not self.lists:
                    self.block_start()
                start = t.attrs.get("start", 1) if kind == "ordered_list_open" else None
                self.lists.append([int(start) if start is not None else None])
            elif kind in ("bullet_list_close", "ordered_list_close"):
                self.lists.pop()
                if not self.lists:
                    self.block_start()
            elif kind == "list_item_open":
                number = self.lists[-1][0] if self.lists else None
                if number is None:
                    marker = BULLETS[(len(self.lists) - 1) % len(BULLETS)] + " "
                else:
                    marker = f"{number}. "
                    self.lists[-1][0] = number + 1
                self.open_level(_Level(marker, " " * len(marker), self.p.dim))
            elif kind == "list_item_close":
                self.levels.pop()
                self.fresh = False
            elif kind == "blockquote_open":
                self.block_start()
                self.open_level(_Level("▎ ", "▎ ", self.p.dim))
            elif kind == "blockquote_close":
                self.levels.pop()
                self.fresh = False
                self.block_start()
            elif kind in ("fence", "code_block"):
                self.block_start()
                self._code(t.content, t.info.strip().split(" ")[0] if t.info else "")
                self.block_start()
            elif kind == "hr":
                self.block_start()
                self.emit(Text("─" * min(self.width, 40), self.p.dim, end=""))
            elif kind == "table_open":
                self.block_start()
                i = self._table(tokens, i)
                continue
            elif kind == "html_block":
                self.block_start()
                for raw in t.content.rstrip("\n").split("\n"):
                    self.emit(Text(raw, end=""))
            i += 1
        return self.out

    def _in_item_start(self) -> bool:
        return bool(self.levels) and not self.levels[-1].used and self.levels[-1].first != "▎ "

    def _task(self, line: Text) -> Text:
        """A task list item, `[ ] do` or `[x] done`, as a check box."""
        head = line.plain[:3]
        box = CHECKS.get(head)
        if box is None or line.plain[3:4] not in ("", " "):
            return line
        out = Text(box, self.p.add if box == "☑" else self.p.dim, end="")
        out.append_text(line[3:])
        return out

    def _heading(self, level: int) -> Style:
        p = self.p
        if level == 1:
            return p.assistant + Style(bold=True, underline=True)
        if level == 2:
            return p.assistant + Style(bold=True)
        return Style(bold=True)

    def _code(self, content: str, language: str) -> None:
        lines = content.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        coloured = highlight_code(lines, language, self.p.pygments) if language else None
        bar = Style.combine([self.p.dim])
        if language:
            self.emit(Text(f"╭ {language}", bar, end=""))
        for k, line in enumerate(lines):
            t = Text("│ ", bar, end="")
            t.append_text(coloured[k] if coloured else Text(line, end=""))
            self.emit(t)
        if language:
            self.emit(Text("╰", bar, end=""))

    def _table(self, tokens: list[Token], i: int) -> int:
        """Rows of cells drawn with box lines; columns as wide as their widest cell (a table
        wider than the view wraps: every character stays on screen)."""
        rows: list[tuple[bool, list[Text]]] = []
        aligns: list[str] = []
        head = False
        while i < len(tokens) and tokens[i].type != "table_close":
            t = tokens[i]
            if t.type == "thead_open":
                head = True
            elif t.type == "tbody_open":
                head = False
            elif t.type == "tr_open":
                rows.append((head, []))
            elif t.type in ("th_open", "td_open"):
                style = str(t.attrs.get("style", ""))
                if len(rows) == 1:
                    aligns.append("right" if "right" in style else
                                  "center" if "center" in style else "left")  # fmt: skip
                cell = Text(" ", end="").join(self.inline(tokens[i + 1]))
                rows[-1][1].append(cell)
                i += 2
            i += 1
        i += 1  # past table_close
        columns = max((len(r) for _, r in rows), default=0)
        widths = [max((r[c].cell_len for _, r in rows if c < len(r)), default=0)
                  for c in range(columns)]  # fmt: skip
        dim = self.p.dim
        self.emit(Text("┌" + "┬".join("─" * (w + 2) for w in widths) + "┐", dim, end=""))
        for k, (is_head, cells) in enumerate(rows):
            line = Text("│", dim, end="")
            for c, w in enumerate(widths):
                cell = cells[c].copy() if c < len(cells) else Text(end="")
                if is_head:
                    cell.stylize(Style(bold=True))
                pad = w - cell.cell_len
                align = aligns[c] if c < len(aligns) else "left"
                left = pad if align == "right" else pad // 2 if align == "center" else 0
                line.append(" " + " " * left)
                line.append_text(cell)
                line.append(" " * (pad - left) + " ")
                line.append("│", dim)
            self.emit(line)
            if is_head and (k + 1 < len(rows) and not rows[k + 1][0]):
                self.emit(Text("├" + "┼".join("─" * (w + 2) for w in widths) + "┤", dim,
                               end=""))  # fmt: skip
        self.emit(Text("└" + "┴".join("─" * (w + 2) for w in widths) + "┘", dim, end=""))
        self.block_start()
        return i


def render_markdown(text: str, palette: Palette, width: int = 80) -> list[Text]:
    """Markdown text as lines of styled text (no trailing blank line)."""
    if len(text) > MAX_CHARS:
        return [Text(line, end="") for line in text.split("\n")]
    tokens = _parser().parse(text)
    lines = _Renderer(palette, width).render(tokens)
    return lines or [Text(end="")]
