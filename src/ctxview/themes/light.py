"""ctxview-light: a light theme with darker diff and link colours for contrast on white."""

from textual.theme import Theme

PYGMENTS_STYLE = "default"

THEME = Theme(
    name="ctxview-light",
    primary="#0969DA",
    secondary="#57606A",
    accent="#8250DF",
    warning="#9A6700",
    error="#CF222E",
    success="#1A7F37",
    foreground="#1F2328",
    background="#FFFFFF",
    surface="#F6F8FA",
    panel="#EAEEF2",
    dark=False,
    variables={
        "ctx-diff-add": "#116329",
        "ctx-diff-add-bg": "#DAFBE1",
        "ctx-diff-remove": "#A40E26",
        "ctx-diff-remove-bg": "#FFEBE9",
        "ctx-diff-hunk": "#0550AE",
        "ctx-link": "#0969DA",
        "ctx-link-stale": "#6E7781",
        "ctx-bracket": "#57606A",
        "ctx-stub": "#8250DF",
        "ctx-elision": "#9A6700",
        "ctx-recall": "#1B7C83",
        "ctx-error": "#CF222E",
        "ctx-boundary": "#BC4C00",
        "ctx-boundary-bg": "#FFF1E5",
        "ctx-user": "#1A7F37",
        "ctx-assistant": "#1F2328",
        "ctx-tool": "#0550AE",
        "ctx-dim": "#6E7781",
        "footer-key-foreground": "#0969DA",
    },
)
