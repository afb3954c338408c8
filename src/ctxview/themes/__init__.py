"""ctxview's themes: each a Textual theme plus the pygments style that matches it.

Every theme defines the same `ctx-*` variables (diff lines, links, stubs, elisions, compaction
boundaries, ...) so the app's TCSS and the renderers can name them as `$ctx-link` etc.
`VARIABLE_DEFAULTS` fills them in for Textual's own themes (the app returns it from
`get_theme_variable_defaults`), so picking a built-in theme never breaks the CSS.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.theme import Theme

from ctxview.themes import contrast, dark, light

DEFAULT = "ctxview-dark"

# The pygments style used when a built-in Textual theme is picked.
FALLBACK_PYGMENTS = {True: "github-dark", False: "default"}


@dataclass(frozen=True)
class CtxTheme:
    name: str
    theme: Theme
    pygments_style: str


THEMES: dict[str, CtxTheme] = {
    module.THEME.name: CtxTheme(module.THEME.name, module.THEME, module.PYGMENTS_STYLE)
    for module in (dark, light, contrast)
}

# The variables every theme must define; values from the default theme.
VARIABLE_DEFAULTS: dict[str, str] = {
    k: v for k, v in dark.THEME.variables.items() if k.startswith("ctx-")
}


def variable_defaults(is_dark: bool) -> dict[str, str]:
    """Fallback `ctx-*` values for a theme that does not define them (Textual's own)."""
    source = dark if is_dark else light
    return {k: v for k, v in source.THEME.variables.items() if k.startswith("ctx-")}


def pygments_style(theme_name: str, is_dark: bool = True) -> str:
    """The pygments style for a theme by name; a matching default for Textual's own themes."""
    found = THEMES.get(theme_name)
    return found.pygments_style if found else FALLBACK_PYGMENTS[is_dark]


def textual_theme_names() -> list[str]:
    """Textual's own themes, which the app offers too."""
    from textual.theme import BUILTIN_THEMES

    return sorted(BUILTIN_THEMES)


def unknown_theme_message(name: str) -> str:
    """One sentence for `--theme` with a name we do not have."""
    return (
        f"There is no theme {name!r}; the themes are {', '.join(THEMES)} "
        f"(and Textual's own: {', '.join(textual_theme_names())})."
    )
