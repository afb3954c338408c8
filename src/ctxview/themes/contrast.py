"""ctxview-contrast: high contrast on black, for bright rooms and projectors."""

from textual.theme import Theme

PYGMENTS_STYLE = "native"

THEME = Theme(
    name="ctxview-contrast",
    primary="#00D7FF",
    secondary="#FFFFFF",
    accent="#FFD700",
    warning="#FFD700",
    error="#FF5F5F",
    success="#5FFF5F",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#1C1C1C",
    dark=True,
    variables={
        "ctx-diff-add": "#5FFF5F",
        "ctx-diff-add-bg": "#003300",
        "ctx-diff-remove": "#FF5F5F",
        "ctx-diff-remove-bg": "#3A0000",
        "ctx-diff-hunk": "#00D7FF",
        "ctx-link": "#00D7FF",
        "ctx-link-stale": "#A8A8A8",
        "ctx-bracket": "#D0D0D0",
        "ctx-stub": "#FF87FF",
        "ctx-elision": "#FFD700",
        "ctx-recall": "#5FFFFF",
        "ctx-error": "#FF5F5F",
        "ctx-boundary": "#FFAF00",
        "ctx-boundary-bg": "#262626",
        "ctx-user": "#5FFF5F",
        "ctx-assistant": "#FFFFFF",
        "ctx-tool": "#87D7FF",
        "ctx-dim": "#A8A8A8",
        "footer-key-foreground": "#FFD700",
    },
)
