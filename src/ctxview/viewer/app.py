"""The ctxview app: one long-lived reader over the store, the store watcher, and the screens."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.screen import Screen

from ctxview.store import Reader, StoreError
from ctxview.store.connect import identity
from ctxview.viewer.messages import Jump, OpenResult, OpenSession, StoreChanged
from ctxview.viewer.reader_app import ReaderApp
from ctxview.viewer.watch import StoreWatcher


def _ids_provider() -> type[Provider]:
    from ctxview.viewer.command_palette import IdsProvider

    return IdsProvider


class CtxviewApp(ReaderApp):
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
        self._following = False  # a look at a new file at the store's path is under way
        self._told: object = None  # what the last notice about the store's file was about
        self._register_themes()

    # Themes (V2's src/ctxview/themes/ package; the app works without it).

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

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice, except that a tab of a web server ends with its server."""
        from textual.drivers.web_driver import WebDriver

        driver = super().get_driver_class()
        if driver is WebDriver:
            from ctxview.viewer.served_driver import ServedDriver

            return ServedDriver
        return driver

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
            self.watcher = StoreWatcher(self.store_path, self.reader, self.store_changed,
                                        moved=self.store_moved)  # fmt: skip
            self.watcher.start()
        await self.push_screen(self.first_screen())

    def first_screen(self) -> Screen[Any]:
        if self.start_session is None:
            try:
                from ctxview.viewer.screens.sessions import SessionsScreen
            except ImportError:
                pass
            else:
                return SessionsScreen()
        from ctxview.viewer.screens.transcript import TranscriptScreen

        return TranscriptScreen(self.start_session, jump=self.start_jump)

    async def on_unmount(self) -> None:
        self.release_loaded()  # whatever a transcript kept
        if self.watcher is not None:
            await self.watcher.stop()
        if self.reader is not None:
            await self.reader.close()

    def store_changed(self) -> None:
        """Called by the watcher; every screen on the stack hears of it but Textual's default
        screen, which has no use for it: a message still wakes that screen, and a repaint of the
        screen under the current one repaints all of the current one (measured: a full-screen
        update per commit, 40 in 60 rows, against 3 without)."""
        for screen in self.screen_stack:
            if type(screen) is not Screen:
                screen.post_message(StoreChanged())

    # The store's file deleted, replaced or renamed over (the watcher looks)

    def store_moved(self) -> None:
        if not self._following:
            self._following = True
            self.run_worker(self._follow_store(), group="ctxview-follow", exit_on_error=False)

    async def _follow_store(self) -> None:
        """Say what happened to the file and open the new one when there is one. What was read
        stays on screen until then (the old file stays readable while it is open)."""
        try:
            now = identity(self.store_path)
            if now == self.reader.identity:
                return
            if now is None:
                self._tell(("gone", self.reader.identity), f"The store {self.store_path} was "
                           f"deleted or moved away; a new store there will be opened when one "
                           f"appears.")  # fmt: skip
                return
            try:
                reader = await Reader.open(self.store_path)
            except StoreError as exc:
                # A store made in place (a filesystem without hard links, `fresh.py`) is empty
                # at first: tell only when it stays unreadable.
                if self._told != ("trying", now):
                    self._told = ("trying", now)
                    return
                self._tell(("bad", now), f"The store {self.store_path} was replaced by a file "
                           f"ctxview cannot read: {str(exc).rstrip('.')}.")  # fmt: skip
                return
            old, self.reader = self.reader, reader
            if self.watcher is not None:
                await self.watcher.follow(reader)
            await self._show_new_store()
            await old.close()
            self._tell(("new", now), f"The store {self.store_path} was replaced; the view now "
                       f"shows the new file.", severity="information")  # fmt: skip
        finally:
            self._following = False

    def _tell(self, about: object, text: str, severity: SeverityLevel = "warning") -> None:
        if about != self._told:
            self._told = about
            self.notify(text, title="Store", severity=severity, timeout=10, markup=False)

    async def _show_new_store(self) -> None:
        """Start over on the new file: the session shown before when it has one, else the list."""
        from ctxview.viewer.screens.transcript import TranscriptScreen

        shown = [s.session_id for s in self.screen_stack if isinstance(s, TranscriptScreen)]
        keep = shown[0] if shown and shown[0] else None
        if keep is not None and await self.reader.session(keep) is None:
            keep = None
        while len(self.screen_stack) > 1:
            await self.pop_screen()
        self.start_session, self.start_jump = keep, None
        await self.push_screen(self.first_screen())

    # Navigation

    async def on_open_session(self, message: OpenSession) -> None:
        from ctxview.viewer.screens.transcript import TranscriptScreen

        await self.push_screen(TranscriptScreen(message.session_id))

    async def on_open_result(self, message: OpenResult) -> None:
        from ctxview.viewer.screens.result import ResultScreen

        await self.push_screen(ResultScreen(message.session_id, message.rid))

    async def on_jump(self, message: Jump) -> None:
        from ctxview.viewer.screens.transcript import TranscriptScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, TranscriptScreen) and screen.session_id == message.session_id:
                self._pop_to(screen)
                screen.jump_to(message.rid)
                return
        await self.push_screen(TranscriptScreen(message.session_id, jump=message.rid))

    def _pop_to(self, screen: Screen[Any]) -> None:
        """Pop the screens above `screen` (a loop here, `self.screen is not screen`, would make
        the type checker forget what `screen` was found to be)."""
        while self.screen is not screen:
            self.pop_screen()

    def action_keys(self) -> None:
        try:
            from ctxview.viewer.screens.help import HelpScreen
        except ImportError:
            self.notify(
                "The keys: g jump, enter open, [ ] boundaries, / search, m model/stored, q quit",
                markup=False,
            )
            return
        self.push_screen(HelpScreen())
