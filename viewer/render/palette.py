"""The colours the renderers use, read from the theme's `ctx-*` variables."""

from __future__ import annotations

from dataclasses import dataclass

from ctxview.themes import pygments_style, variable_defaults
from rich.style import Style
from textual.theme import Theme


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
    def from_theme(cls, theme: Theme, pygments: str) -> Palette:
        # A theme without the ctx-* variables (one of Textual's own) takes ours.
        v = {
            **variable_defaults(theme.dark),
            **{k: str(x) for k, x in (theme.variables or {}).items()},
        }

        def fg(name: str) -> Style:
            return Style(color=v[name])

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
            add_bg=Style(bgcolor=v["ctx-diff-add-bg"]),
            remove=fg("ctx-diff-remove"),
            remove_bg=Style(bgcolor=v["ctx-diff-remove-bg"]),
            hunk=fg("ctx-diff-hunk"),
            cursor=Style(color=theme.accent or theme.primary, bold=True),
            fold=Style(color=v["ctx-dim"], italic=True),
            hit=Style(color=theme.background or "black", bgcolor=theme.warning or "yellow"),
        )


_BY_THEME: dict[str, Palette] = {}


def palette_for(theme: Theme) -> Palette:
    """The palette of a theme, made once per theme: every view asks on every render."""
    found = _BY_THEME.get(theme.name)
    if found is None:
        found = _BY_THEME[theme.name] = Palette.from_theme(
            theme, pygments_style(theme.name, theme.dark)
        )
    return found
