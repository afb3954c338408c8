"""The colours the renderers use, read from the theme's `ctx-*` variables."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from textual.theme import Theme

DEFAULTS = {
    "ctx-diff-add": "#56D364",
    "ctx-diff-add-bg": "#12261E",
    "ctx-diff-remove": "#F47067",
    "ctx-diff-remove-bg": "#2D1517",
    "ctx-diff-hunk": "#79C0FF",
    "ctx-link": "#58A6FF",
    "ctx-link-stale": "#6E7681",
    "ctx-bracket": "#8B949E",
    "ctx-stub": "#D2A8FF",
    "ctx-elision": "#E3B341",
    "ctx-recall": "#39C5CF",
    "ctx-error": "#F85149",
    "ctx-boundary": "#F0883E",
    "ctx-boundary-bg": "#2A1C0F",
    "ctx-user": "#7EE787",
    "ctx-assistant": "#E6EDF3",
    "ctx-tool": "#A5D6FF",
    "ctx-dim": "#6E7681",
}


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
        v = {**DEFAULTS, **{k: str(x) for k, x in (theme.variables or {}).items()}}

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
