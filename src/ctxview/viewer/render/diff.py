"""Edit results as coloured unified diffs: hunk headers, + and − lines on their own background,
the file's language coloured with pygments."""

from __future__ import annotations

from rich.text import Text

from ctxview.rules.brackets import file_sections
from ctxview.viewer.render.colours import Palette
from ctxview.viewer.render.highlight import highlight_lines


def diff_lines(lines: list[str], path: str | None, palette: Palette) -> list[Text]:
    """Colour the body of an edit result, section by section (a patch has one per file)."""
    out: list[Text] = []
    for header, file_path, section in file_sections(lines, path):
        if header is not None:
            out.append(Text(header, palette.bracket, end=""))
        if section:
            out.extend(_section(section, file_path, palette))
    return out


def _is_diff(line: str) -> bool:
    return line[:1] in ("+", "-", " ") or line.startswith("@@")


def _section(lines: list[str], path: str | None, palette: Palette) -> list[Text]:
    code = [line[1:] if _is_diff(line) and not line.startswith("@@") else "" for line in lines]
    coloured = highlight_lines(code, path, palette.pygments)
    out: list[Text] = []
    for i, line in enumerate(lines):
        if line.startswith("@@"):
            out.append(Text(line, palette.hunk, end=""))
            continue
        mark = line[:1]
        if not _is_diff(line):
            out.append(Text(line, end=""))
            continue
        body = coloured[i].copy() if coloured else Text(code[i], end="")
        if mark == "+":
            text = Text("+", palette.add, end="") + body
            text.stylize(palette.add_bg)
            if not coloured:
                text.stylize(palette.add, 1)
        elif mark == "-":
            text = Text("-", palette.remove, end="") + body
            text.stylize(palette.remove_bg)
            if not coloured:
                text.stylize(palette.remove, 1)
        else:
            text = Text(" ", end="") + body
        out.append(text)
    return out
