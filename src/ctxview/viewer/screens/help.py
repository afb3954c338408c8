"""The keys screen (`?`): every key of the viewer, grouped, with what it does."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# (group, [(keys, what it does)]): the keys of DESIGN.md, in the words of the spec.
KEYS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Move around", [
        ("g  #", "jump to a result id (with or without #)"),
        ("enter", "open the id under the cursor, or fold / unfold the block"),
        ("[  ]", "previous / next compaction boundary"),
        ("alt+←  alt+→", "back / forward through your jumps"),
        ("end", "back to the live tail (follow new rows)"),
        ("↑ ↓  pgup pgdn  home", "scroll"),
    ]),
    ("Find", [
        ("/", "search the session: messages, calls, thinking, summaries, results"),
        ("/ (session list)", "search every session"),
        ("n  N", "next / previous hit"),
        ("ctrl+p", "command palette: ids, paths, tools, sessions, themes"),
    ]),
    ("Show", [
        ("m", "what the model saw / the full stored text"),
        # Named with their screen: `r` and `t` mean other things elsewhere (reload, in
        # transcript), which the keys screen still lists for those screens.
        ("t (transcript)", "open / fold a message's thinking, a call's prompt, file or input"),
        ("r (transcript)", "messages as their raw text / as Markdown"),
        ("click an id", "open the full stored result"),
        ("click a stub", "go to the result it stands for"),
        ("click an elision", "open the elided middle in place"),
        ("click \"elided since\"", "go to the elision stride that took the result out"),
    ]),
    ("Requests", [
        ("c (transcript)", "the context panel: size, breaks and cache use per request"),
        ("x (transcript)", "the context exactly as sent at the cursor's request"),
        ("[ ] (request)", "previous / next request"),
        ("j (request)", "a proxied request's body as JSON, exactly as forwarded"),
        ("d (request)", "changes since the previous request: where the prompt cache broke, why"),
    ]),
    ("The app", [
        ("?", "these keys"),
        ("escape", "close a view, a prompt or this screen"),
        ("q", "quit"),
    ]),
]  # fmt: skip


# The screens a key of KEYS may be named with ("t (transcript)"), by their class.
_SCOPES = {"TranscriptScreen": "transcript", "SessionsScreen": "session list",
           "ContextScreen": "request", "RequestDiffScreen": "request"}  # fmt: skip

# Moves every scrolling widget has; the fixed list already says "scroll".
_GENERIC_PREFIXES = ("scroll_", "cursor_", "page_", "focus_")
_GENERIC = {"cursor", "page", "up", "down", "left", "right", "first", "copy_text", "quit",
            "select_cursor", "command_palette"}  # fmt: skip


def keys_table(extra: list[tuple[str, str]] | None = None) -> Table:
    """The keys of DESIGN.md, then `extra`: keys the screen below has that the list lacks."""
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold", no_wrap=True)
    table.add_column()
    groups = KEYS + ([("Also here", extra)] if extra else [])
    for i, (group, rows) in enumerate(groups):
        if i:
            table.add_row("", "")
        table.add_row(Text(""), Text(group, style="bold underline"))
        for keys, what in rows:
            table.add_row(Text(keys), Text(what))
    return table


class HelpScreen(ModalScreen[None]):
    """A modal list of the keys; any of escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 78; max-width: 95%; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 1 2;
    }
    HelpScreen #help-title { text-style: bold; color: $primary; padding-bottom: 1; }
    HelpScreen #help-keys { height: auto; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("ctxview keys", id="help-title")
            yield Static(keys_table(self._others()), id="help-keys")

    def _others(self) -> list[tuple[str, str]]:
        """Bindings of the screen the keys were asked on that the fixed list does not name, so
        a key added to a screen shows up here without editing this file."""
        stack = self.app.screen_stack
        below = (
            stack[-1] if stack and stack[-1] is not self else stack[-2] if len(stack) > 1 else None
        )
        if below is None:
            return []
        listed = {what for _, rows in KEYS for _, what in rows}
        named = {k.strip() for _, rows in KEYS for keys, _ in rows for k in keys.split("  ")}
        # A key named with its screen ("t (transcript)") is named only on that screen (it means
        # something else on another, which is listed there): t and r were listed twice.
        scope = _SCOPES.get(type(below).__name__)
        named |= {k.removesuffix(f" ({scope})") for k in named if scope}
        out: list[tuple[str, str]] = []
        for key, active in below.active_bindings.items():
            binding = active.binding
            shown = binding.key_display or self.app.get_key_display(binding)
            action = binding.action.rsplit(".", 1)[-1].split("(")[0]
            if action in _GENERIC or action.startswith(_GENERIC_PREFIXES):
                continue  # scrolling and focus moves: every Textual widget has them
            described = binding.description.lower()
            if not described or described in listed or shown in named:
                continue
            if key in named:
                continue
            out.append((shown, described))
        return out
