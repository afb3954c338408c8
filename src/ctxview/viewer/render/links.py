"""Ids in any text become links: a click (Style meta `rid`) opens the result. Untrusted text is
never parsed as markup; it arrives here as a rich Text and only gains styles.

What the viewer says about a text (a link's result is no longer in context, a stub leads to its
result, the elided middle opens here) is an annotation: put beside the text, after it on its
line, dim and italic, and marked (Style meta `note`), never inside it; the text itself is
exactly what the model got (issue 16 §1.11: "(not in context since boundary 1)" stood inside a
recall's bracket). `model_text` takes a line's annotations off again."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text

from ctxview.rules.ids import ID_IN_TEXT
from ctxview.viewer.render.colours import Palette

# rid -> the compaction epoch of the block that holds it, or None when it is no result here.
EpochOf = Callable[[int], int | None]


NOTE_META = Style(meta={"note": True})
NOTE_GAP = "  "


def link_style(rid: int, base: Style) -> Style:
    return base + Style(meta={"rid": rid})


def annotate(line: Text, words: str, style: Style) -> Text:
    """`line` with an annotation after it (a gap, then `words` in `style`, marked as a note)."""
    line.append(NOTE_GAP + words, style + Style(italic=True) + NOTE_META)
    return line


def is_note(style: Style | str | None) -> bool:
    return isinstance(style, Style) and bool(style.meta.get("note"))


def model_text(line: Text) -> str:
    """A drawn line's text without its annotations: the model's own text on it."""
    plain = line.plain
    keep = [True] * len(plain)
    for span in line.spans:
        if is_note(span.style):
            keep[span.start : span.end] = [False] * (span.end - span.start)
    return "".join(ch for ch, k in zip(plain, keep, strict=True) if k)


def linkify(text: Text, epoch_of: EpochOf, epoch: int, palette: Palette) -> Text:
    """Style every `#hex` naming a result of the session as a link. A result from before the
    block's compaction epoch is marked as no longer in the model's context."""
    plain = text.plain
    if "#" not in plain:
        return text
    matches = list(ID_IN_TEXT.finditer(plain))
    if not matches:
        return text
    out = Text(style=text.style, end="")
    pos = 0
    stale: list[str] = []
    for match in matches:
        rid = int(match.group(1), 16)
        where = epoch_of(rid)
        if where is None:
            continue
        start, end = match.span()
        out.append_text(text[pos:start])
        piece = text[start:end]
        if where < epoch:
            piece.stylize(link_style(rid, palette.stale))
            stale.append(f"{match.group(0)} not in context since boundary {where + 1}")
        else:
            piece.stylize(link_style(rid, palette.link))
        out.append_text(piece)
        pos = end
    if pos == 0:
        return text
    out.append_text(text[pos:])
    if stale:
        annotate(out, "◂ " + "; ".join(stale), palette.dim)
    return out
