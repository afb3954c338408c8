"""Ids in any text become links: a click (Style meta `rid`) opens the result. Untrusted text is
never parsed as markup; it arrives here as a rich Text and only gains styles."""

from __future__ import annotations

from collections.abc import Callable

from ctxview.backend.rules.ids import ID_IN_TEXT
from rich.style import Style
from rich.text import Text

from .palette import Palette

# rid -> the compaction epoch of the block that holds it, or None when it is no result here.
EpochOf = Callable[[int], int | None]


def link_style(rid: int, base: Style) -> Style:
    return base + Style(meta={"rid": rid})


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
            out.append_text(piece)
            out.append(
                f" (not in context since boundary {where + 1})", palette.dim + Style(italic=True)
            )
        else:
            piece.stylize(link_style(rid, palette.link))
            out.append_text(piece)
        pos = end
    if pos == 0:
        return text
    out.append_text(text[pos:])
    return out
