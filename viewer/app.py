"""The ctxview app: one long-lived reader over the store, the store watcher, and the screens."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from ctxview.backend.store import Reader
from textual.app import App
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.screen import Screen

from .messages import Jump, OpenResult, OpenSession, StoreChanged
from .watch import StoreWatcher


def _ids_provider() -> type[Provider]:
    from .palette import IdsProvider

    return IdsProvider


class CtxviewApp(App[None]):
    """A Textual app over a ctxview store. It reads the store and never writes it."""

    CSS_PATH = "app.tcss"
    TITLE = "ctxview"
    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = App.COMMANDS | {
        _ids_provider
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "keys", "Keys"),
        Binding("ctrl+p", "command_palette", "Palette", show=False),
    ]

    def __init__(
        self,
        store_path: Path | str,
        *,
        session: str | None = None,
        jump: str | None = None,
        theme: str | None = None,
        watch: bool = True,
    ) -> None:
        super().__init__()
        self.store_path = Path(store_path)
        self.start_session = session
        self.start_jump = jump
        self.start_theme = theme
        self.watch_store = watch
        self.reader: Reader = None  # type: ignore[assignment]  # opened in on_mount
        self.watcher: StoreWatcher | None = None
        self._register_themes()

    # Themes (V2's themes/ package; the app works without it).

    def _register_themes(self) -> None:
        try:
            from ctxview import themes
        except ImportError:
            return
        for ct in themes.THEMES.values():
            self.register_theme(ct.theme)
        name = self.start_theme or themes.DEFAULT
        if name in self.available_themes:
            self.theme = name

    def get_theme_variable_defaults(self) -> dict[str, str]:
        try:
            from ctxview import themes
        except ImportError:
            return {}
        return dict(themes.VARIABLE_DEFAULTS)

    @property
    def pygments_style(self) -> str:
        try:
            from ctxview import themes
        except ImportError:
            return "monokai" if self.current_theme.dark else "default"
        return themes.pygments_style(self.theme, self.current_theme.dark)

    # Life cycle

    async def on_mount(self) -> None:
        self.reader = await Reader.open(self.store_path)
        if self.watch_store:
            self.watcher = StoreWatcher(self.store_path, self.reader, self.store_changed)
            self.watcher.start()
        await self.push_screen(self.first_screen())

    def first_screen(self) -> Screen[Any]:
        if self.start_session is None:
            try:
                from .screens.sessions import SessionsScreen
            except ImportError:
                pass
            else:
                return SessionsScreen()
        from .screens.transcript import TranscriptScreen

        return TranscriptScreen(self.start_session, jump=self.start_jump)

    async def on_unmount(self) -> None:
        if self.watcher is not None:
            await self.watcher.stop()
        if self.reader is not None:
            await self.reader.close()

    def store_changed(self) -> None:
        """Called by the watcher; every screen on the stack hears of it."""
        for screen in self.screen_stack:
            screen.post_message(StoreChanged())

    # Navigation

    async def on_open_session(self, message: OpenSession) -> None:
        from .screens.transcript import TranscriptScreen

        await self.push_screen(TranscriptScreen(message.session_id))

    async def on_open_result(self, message: OpenResult) -> None:
        from .screens.result import ResultScreen

        await self.push_screen(ResultScreen(message.session_id, message.rid))

    async def on_jump(self, message: Jump) -> None:
        from .screens.transcript import TranscriptScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, TranscriptScreen) and screen.session_id == message.session_id:
                while self.screen is not screen:
                    self.pop_screen()
                screen.jump_to(message.rid)
                return
        await self.push_screen(TranscriptScreen(message.session_id, jump=message.rid))

    def action_keys(self) -> None:
        try:
            from .screens.help import HelpScreen
        except ImportError:
            self.notify(
                "The keys: g jump, enter open, [ ] boundaries, / search, m model/stored, q quit",
                markup=False,
            )
            return
        self.push_screen(HelpScreen())
