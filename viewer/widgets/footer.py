"""The footer of every screen: `q Quit` and `? Keys` pinned at the right, the screen's own keys
from the left, and a key that does not fit whole is left out (never cut in half), so an 80-column
terminal (or a browser at 800×600) still shows how to quit and where the other keys are."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, KeyGroup

# Actions whose key stays on screen whatever the width, in this order.
PINNED = ("quit", "keys")
# Below this width the command palette's key gives its room to the screen's keys (? names it).
PALETTE_MIN_WIDTH = 110


def _action(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def key_width(key: FooterKey) -> int:
    """The cells a key takes (FooterKey's render, not compact: ` key ` then `description `)."""
    from rich.cells import cell_len

    if not key.description:
        return cell_len(key.key_display)
    return cell_len(key.key_display) + 2 + cell_len(key.description) + 1


class KeysFooter(Footer):
    """Textual's Footer with the keys that matter kept visible at any width."""

    DEFAULT_CSS = """
    KeysFooter #pinned-keys { dock: right; width: auto; }
    """

    def compose(self) -> ComposeResult:
        items = list(super().compose())  # ctxview's screens use no binding groups
        keys = [w for w in items if isinstance(w, FooterKey)]
        pinned = sorted(
            (k for k in keys if _action(k.action) in PINNED and not k.has_class("-command-palette")),
            key=lambda k: PINNED.index(_action(k.action)),
        )
        palette = [k for k in keys if k.has_class("-command-palette")]
        for k in palette:
            k.remove_class("-command-palette")  # it joins the pinned group instead of docking
        rest: list[Widget] = [w for w in items if w not in pinned and w not in palette]
        yield from rest
        if pinned or palette:
            yield KeyGroup(*palette, *pinned, id="pinned-keys")
        self.call_after_refresh(self.fit)

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
                if _action(k.action) not in PINNED:  # the palette's key
                    k.display = width >= PALETTE_MIN_WIDTH
                if k.display:
                    room -= key_width(k)
        for k in self.query(FooterKey):
            if k.parent is not None and k.parent.id == "pinned-keys":
                continue
            need = key_width(k)
            k.display = need <= room
            if k.display:
                room -= need
            else:
                room = 0  # keep the order: nothing after a key left out
