"""The footer of every screen: `q Quit` and `? Keys` pinned at the right (the command palette's
key before them), the screen's own keys from the left in the order the screen gives
(`FOOTER_ORDER`: the keys that matter there first), and a key that does not fit whole is left out
(never cut in half), so an 80-column terminal (or a browser at 800×600) still shows how to quit,
the palette, and the screen's main keys.

When the keys that apply change (a jump makes `back` apply), Textual's Footer composes itself
anew: every key is unmounted and mounted again and restyled, 200-300 ms of a jump that otherwise
takes 30-40. This one keeps its keys. A screen says that a key does not apply now by disabling
it (`check_action` answers None, not False, which would drop it from the bindings): the key is
hidden, in place, and shown again when it applies. It composes anew only for a key it never had.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, KeyGroup

# Actions whose key stays on screen whatever the width, in this order.
PINNED = ("quit", "keys")
# Below this width the command palette's key gives its room to the screen's keys (? names it).
PALETTE_MIN_WIDTH = 60


def _action(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def key_width(key: FooterKey) -> int:
    """The cells a key takes (FooterKey's render, not compact: ` key ` then `description `)."""
    from rich.cells import cell_len

    if not key.description:
        return cell_len(key.key_display)
    return cell_len(key.key_display) + 2 + cell_len(key.description) + 1


def _ident(key: FooterKey) -> tuple[str, str, str]:
    return (key.action, key.key, key.description)


class KeysFooter(Footer):
    """Textual's Footer with the keys that matter kept visible at any width."""

    DEFAULT_CSS = """
    KeysFooter #pinned-keys { dock: right; width: auto; }
    """

    def compose(self) -> ComposeResult:
        rest, group = self._arranged()
        for k in [*rest, *group]:
            if isinstance(k, FooterKey) and k._disabled:
                k.add_class("-not-applicable")
        yield from rest
        if group:
            yield KeyGroup(*group, id="pinned-keys")
        self.call_after_refresh(self.fit)

    def _arranged(self) -> tuple[list[Widget], list[FooterKey]]:
        """Textual's keys for the screen as it is now: the screen's own, then the pinned group
        (the palette's key first, then PINNED's, in that order)."""
        items = list(super().compose())  # ctxview's screens use no binding groups
        keys = [w for w in items if isinstance(w, FooterKey)]
        pinned = sorted(
            (
                k
                for k in keys
                if _action(k.action) in PINNED and not k.has_class("-command-palette")
            ),
            key=lambda k: PINNED.index(_action(k.action)),
        )
        palette = [k for k in keys if k.has_class("-command-palette")]
        for k in palette:
            k.remove_class("-command-palette")  # it joins the pinned group instead of docking
        rest: list[Widget] = [w for w in items if w not in pinned and w not in palette]
        # The screen's keys in its own order of importance (Textual's: the focused widget's
        # first, so the transcript's `end` and `enter` took the room of `]` and the rest).
        order: tuple[str, ...] = getattr(self.screen, "FOOTER_ORDER", ())
        if order:
            rank = {a: i for i, a in enumerate(order)}
            rest.sort(key=lambda w: rank.get(_action(w.action), len(order))
                      if isinstance(w, FooterKey) else len(order))  # fmt: skip
        return rest, [*palette, *pinned]

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self.update_keys)

    def update_keys(self) -> None:
        """Bring the keys up to date in place when every key that applies now is one this footer
        has, in the same order; otherwise compose anew."""
        if not self.is_attached:
            return
        with self._context():  # Footer's compose binds its keys to the active message pump
            rest, group = self._arranged()
        wanted = {_ident(k): k for k in [*rest, *group] if isinstance(k, FooterKey)}
        have = [(_ident(k), k) for k in self.query(FooterKey)]
        if [ident for ident, _ in have if ident in wanted] != list(wanted):
            self.call_later(self.recompose)
            return
        for ident, k in have:
            new = wanted.get(ident)
            k.set_class(new is None or new._disabled, "-not-applicable")
            if new is not None and new._disabled != k._disabled:
                k._disabled = new._disabled
                k.set_class(new._disabled, "-disabled")
        self.fit()

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Show the screen's keys, in order, while each fits whole beside the pinned ones."""
        width = self.size.width
        if not width or not self.is_attached:
            return
        group = self.query("#pinned-keys")
        room = width
        if group:
            for k in group.first().query(FooterKey):
                applies = not k.has_class("-not-applicable")
                if _action(k.action) not in PINNED:  # the palette's key
                    k.display = applies and width >= PALETTE_MIN_WIDTH
                else:
                    k.display = applies
                if k.display:
                    room -= key_width(k)
        for k in self.query(FooterKey):
            if k.parent is not None and k.parent.id == "pinned-keys":
                continue
            if k.has_class("-not-applicable"):
                k.display = False
                continue
            need = key_width(k)
            k.display = need <= room
            if k.display:
                room -= need
            else:
                room = 0  # keep the order: nothing after a key left out
