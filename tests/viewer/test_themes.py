"""Themes: each a Textual theme with a pygments style and the same readable `ctx-*` colours;
the app registers them, Textual's picker lists them, `--theme` picks one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pygments.styles import get_style_by_name
from textual.color import Color
from textual.command import CommandPalette
from textual.widgets import OptionList
from viewer_helpers import palette_search, wait_for

from ctxview import themes
from ctxview.engine.session import Session
from ctxview.store import Writer
from ctxview.viewer.app import CtxviewApp

CTXVIEW = str(Path(sys.executable).with_name("ctxview"))


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio of two colours."""

    def lum(c: Color) -> float:
        def ch(v: int) -> float:
            x = v / 255
            return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

        return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b)

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_at_least_a_dark_and_a_light_theme() -> None:
    assert themes.DEFAULT in themes.THEMES
    darkness = {t.theme.dark for t in themes.THEMES.values()}
    assert darkness == {True, False}
    for name, ct in themes.THEMES.items():
        assert ct.name == ct.theme.name == name
        get_style_by_name(ct.pygments_style)  # raises when the style does not exist


@pytest.mark.parametrize("name", sorted(themes.THEMES))
def test_every_theme_defines_every_variable_readably(name: str) -> None:
    theme = themes.THEMES[name].theme
    variables = theme.variables
    assert set(themes.VARIABLE_DEFAULTS) <= set(variables)
    for key, value in variables.items():
        if not key.startswith("ctx-") or key.endswith("-bg"):
            continue
        # Text on its own background (a diff line on its tint), else on the theme's background.
        back = Color.parse(variables.get(f"{key}-bg", theme.background or "#000000"))
        assert contrast(Color.parse(value), back) >= 4.5, key


def test_variable_defaults_cover_textuals_own_themes() -> None:
    for is_dark in (True, False):
        assert set(themes.variable_defaults(is_dark)) == set(themes.VARIABLE_DEFAULTS)
    assert themes.pygments_style("textual-light", is_dark=False) == "default"
    assert themes.pygments_style("ctxview-light") == themes.THEMES["ctxview-light"].pygments_style


@pytest.fixture
async def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    (tmp_path / "ws").mkdir()
    writer = await Writer.open(path)
    await Session.start(writer, tmp_path / "ws", title="a session")
    await writer.close()
    return path


async def test_the_picker_lists_them_and_picking_one_works(store: Path) -> None:
    app = CtxviewApp(store, watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.theme == themes.DEFAULT
        app.search_themes()
        shown = await palette_search(pilot, "ctxview", lambda hits: all(
            any(name in text for text in hits) for name in themes.THEMES))  # fmt: skip
        assert isinstance(app.screen, CommandPalette)
        options = app.screen.query_one(OptionList)
        for name in themes.THEMES:
            assert any(name in text for text in shown), (name, shown)
        # Pick the light one: the app's theme and its pygments style follow.
        light = next(i for i, text in enumerate(shown) if "ctxview-light" in text)
        options.highlighted = light
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "ctxview-light")
        assert app.get_css_variables()["ctx-diff-add"] == "#116329"


async def test_theme_option_and_builtin_fallback(store: Path) -> None:
    app = CtxviewApp(store, theme="ctxview-light", watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.theme == "ctxview-light"
        # A built-in Textual theme still gets every ctx-* variable, so the CSS keeps working.
        app.theme = "textual-dark"
        await pilot.pause()
        assert set(themes.VARIABLE_DEFAULTS) <= set(app.get_css_variables())


def test_unknown_theme_is_one_sentence_listing_them(store: Path) -> None:
    for command in (["view"], ["demo", "--no-view"]):
        done = subprocess.run(
            [CTXVIEW, "--store", str(store), *command, "--theme", "nope"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.count("\n") == 1
        for name in themes.THEMES:
            assert name in done.stderr


@pytest.mark.parametrize("name", sorted(themes.THEMES))
def test_diff_tints_survive_256_colours(name: str) -> None:
    """Issue 16 §4.3: in a 256-colour terminal a diff line's tint is a colour of the palette
    that is neither the theme's background there nor grey (ctxview-dark's became black)."""
    from rich.color import Color as RichColor
    from rich.color import ColorSystem

    from ctxview.viewer.render.colours import palette_for

    theme = themes.THEMES[name].theme
    pal = palette_for(theme, "256")
    ground = RichColor.parse(str(theme.background)).downgrade(ColorSystem.EIGHT_BIT)
    for style, channel in ((pal.add_bg, 1), (pal.remove_bg, 0)):
        assert style.bgcolor is not None
        tint = style.bgcolor.downgrade(ColorSystem.EIGHT_BIT)
        assert tint.number != ground.number, (name, tint, ground)
        rgb = tint.get_truecolor()
        assert rgb[channel] == max(rgb) and len(set(rgb)) > 1, (name, rgb)  # green, red: no grey
    # Truecolour keeps the theme's own shade.
    assert palette_for(theme, "truecolor").add_bg.bgcolor == RichColor.parse(
        theme.variables["ctx-diff-add-bg"]
    )
