"""ctxview-dark: a calm dark theme; diff and link colours stay readable on dark terminals."""

from textual.theme import Theme

PYGMENTS_STYLE = "github-dark"

THEME = Theme(
    name="ctxview-dark",
    primary="#58A6FF",
    secondary="#8B949E",
    accent="#D2A8FF",
    warning="#D29922",
    error="#F85149",
    success="#3FB950",
    foreground="#E6EDF3",
    background="#0D1117",
    surface="#161B22",
    panel="#1F2630",
    dark=True,
    variables={
        # Diffs: + and − lines, their backgrounds, the @@ hunk header.
        "ctx-diff-add": "#56D364",
        "ctx-diff-add-bg": "#12261E",
        "ctx-diff-remove": "#F47067",
        "ctx-diff-remove-bg": "#2D1517",
        "ctx-diff-hunk": "#79C0FF",
        # Ids are links; a link to a result no longer in the model's context is dimmer.
        "ctx-link": "#58A6FF",
        "ctx-link-stale": "#848D97",
        # Result brackets, stubs (unchanged / same-result), elision lines, recalls, errors.
        "ctx-bracket": "#8B949E",
        "ctx-stub": "#D2A8FF",
        "ctx-elision": "#E3B341",
        "ctx-recall": "#39C5CF",
        "ctx-error": "#F85149",
        # Compaction boundary row.
        "ctx-boundary": "#F0883E",
        "ctx-boundary-bg": "#2A1C0F",
        # Speakers.
        "ctx-user": "#7EE787",
        "ctx-assistant": "#E6EDF3",
        "ctx-tool": "#A5D6FF",
        "ctx-dim": "#848D97",
        "footer-key-foreground": "#58A6FF",
    },
)
