"""The colours the renderers use, read from the theme's `ctx-*` variables."""

from __future__ import annotations

from dataclasses import dataclass

from rich.color import Color
from rich.style import Style
from textual.theme import Theme

from ctxview.themes import pygments_style, variable_defaults

# The 6x6x6 cube of the 256-colour palette (indices 16-231), by its levels per channel.
_CUBE = (0, 95, 135, 175, 215, 255)


def tint_256(color: str) -> str:
    """A tint (a line's background) as it should look in a 256-colour terminal: the nearest
    colour of the palette's cube that is not grey. Rich rounds each channel on its own, so a
    dark theme's subtle green (#12261E) became black, the terminal's own background, and a
    diff's lines lost their tint; tmux's default terminal has 256 colours. A grey stays grey."""
    r, g, b = Color.parse(color).get_truecolor()
    if max(r, g, b) - min(r, g, b) < 8:
        return color  # grey: rich's own rounding (to the grey ramp) is right
    best = min(
        ((cr, cg, cb) for cr in _CUBE for cg in _CUBE for cb in _CUBE
         if not cr == cg == cb),
        key=lambda c: (c[0] - r) ** 2 + (c[1] - g) ** 2 + (c[2] - b) ** 2,
    )  # fmt: skip
    index = 16 + 36 * _CUBE.index(best[0]) + 6 * _CUBE.index(best[1]) + _CUBE.index(best[2])
    return f"color({index})"


@dataclass(frozen=True)
class Palette:
    name: str
    dark: bool
    pygments: str
    link: Style
    stale: Style
    bracket: Style
    stub: Style
    elision: Style
    recall: Style
    error: Style
    boundary: Style
    boundary_text: Style
    user: Style
    assistant: Style
    tool: Style
    dim: Style
    add: Style
    add_bg: Style
    remove: Style
    remove_bg: Style
    hunk: Style
    cursor: Style
    fold: Style
    hit: Style

    @classmethod
    def from_theme(cls, theme: Theme, pygments: str, color_system: str | None = None) -> Palette:
        """`color_system`: the console's ("256", "truecolor", ...); tints are chosen for it."""
        # A theme without the ctx-* variables (one of Textual's own) takes ours.
        v = {
            **variable_defaults(theme.dark),
            **{k: str(x) for k, x in (theme.variables or {}).items()},
        }

        def fg(name: str) -> Style:
            return Style(color=v[name])

        def tint(name: str) -> Style:
            return Style(bgcolor=tint_256(v[name]) if color_system == "256" else v[name])

        return cls(
            name=theme.name,
            dark=theme.dark,
            pygments=pygments,
            link=Style(color=v["ctx-link"], underline=True),
            stale=Style(color=v["ctx-link-stale"], underline=True),
            bracket=fg("ctx-bracket"),
            stub=fg("ctx-stub"),
            elision=Style(color=v["ctx-elision"], italic=True),
            recall=fg("ctx-recall"),
            error=fg("ctx-error"),
            boundary=Style(color=v["ctx-boundary"], bgcolor=v["ctx-boundary-bg"], bold=True),
            boundary_text=Style(bgcolor=v["ctx-boundary-bg"]),
            user=Style(color=v["ctx-user"], bold=True),
            assistant=Style(color=v["ctx-assistant"], bold=True),
            tool=Style(color=v["ctx-tool"], bold=True),
            dim=fg("ctx-dim"),
            add=fg("ctx-diff-add"),
            add_bg=tint("ctx-diff-add-bg"),
            remove=fg("ctx-diff-remove"),
            remove_bg=tint("ctx-diff-remove-bg"),
            hunk=fg("ctx-diff-hunk"),
            cursor=Style(color=theme.accent or theme.primary, bold=True),
            fold=Style(color=v["ctx-dim"], italic=True),
            hit=Style(color=theme.background or "black", bgcolor=theme.warning or "yellow"),
        )


_BY_THEME: dict[tuple[str, str | None], Palette] = {}


def palette_for(theme: Theme, color_system: str | None = None) -> Palette:
    """The palette of a theme for a console's colour system (`console.color_system`), made once
    per pair: every view asks on every render."""
    found = _BY_THEME.get((theme.name, color_system))
    if found is None:
        found = _BY_THEME[theme.name, color_system] = Palette.from_theme(
            theme, pygments_style(theme.name, theme.dark), color_system
        )
    return found
